"""Numeric limits shared by the decoders and the build's command line (torch-free, so the command line can check its
arguments before torch is imported)."""

# The least temperature above 0 that is sampled from. Temperature T divides the logits: below about 1e-37 a logit of
# 10 / T overflows float32 to inf and the softmax is NaN; well before that, T is greedy in all but name (at
# T = 1e-6 a logit gap of 1e-4 gives odds of e^100). So 0 < T < MIN_TEMPERATURE is refused, naming T, rather than
# sampled as greedy by a silent rule: temperature=0 is greedy, and says so.
MIN_TEMPERATURE = 1e-6
