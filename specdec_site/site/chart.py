"""What every figure shares: the palette (the Step Visualizer reads it too, through visualizer.json), the common
layout, a prompt set's name, which traces are chain runs, and how an interval over few prompts is named."""

from __future__ import annotations

from specdec_site.public_prompts import LABELS

# One home for colours: the figures use them here, the visualizer gets them through visualizer.json.
PALETTE = {
    "code": "#3f51b5", "prose": "#e91e63", "dialogue": "#00838f", "narrative": "#8d6e63",  # domains
    # dark enough for 3:1 on white, light enough for 3:1 on the dark scheme's slate (or toned there: DARK_TONES)
    "p": "#3f51b5", "q": "#ef6c00", "residual": "#9c27b0", "target_only": "#607d8b",
    "accept": "#388e3c", "reject": "#f44336", "unevaluated": "#757575",
    # token fates in the visualizer's strip (light backgrounds under dark text)
    "accepted": "#a5d6a7", "rejected": "#ef9a9a", "resampled": "#ce93d8", "bonus": "#90caf9",
}


DASH = {"greedy": "solid", "sampled": "dash"}


def set_name(domain: str) -> str:
    """A prompt set as the pages name it ("prose" is technical prose: the Python Language Reference)."""
    return LABELS.get(domain, domain)


# Layout defaults of the visualizer's small charts (drawn in the browser from visualizer.json).
CHART_LAYOUT = {"margin": {"t": 40, "r": 10, "b": 80, "l": 50}, "height": 340, "title": {"font": {"size": 13}},
                "legend": {"orientation": "h", "y": 1.12, "x": 1, "xanchor": "right"}}


def chain_runs(traces: dict) -> list:
    """The traces' chain runs under the token rule: a token-tree run (its drafter "tree", its steps listing parents)
    and a block-verification run (its trace's verify "block": another rule, which keeps more) are drawn by the Step
    Visualizer, and left out of every statistic of chain steps."""
    return [r for r in traces["runs"] if r["trace"].get("drafter") != "tree" and r["trace"].get("verify", "token") == "token"]


def layout(title: str, x: str, y: str, **extra) -> dict:
    """The figures' common layout. Readable at 375 px as at 1400 (assets/specdec.js re-wraps the title and hides
    the toolbar on narrow screens): the title left-aligned in the container and given its own margin (automargin), the
    legend under the plot in the container's margin, never over the data or the axis titles."""
    xaxis = {"title": {"text": x}, "automargin": True}
    if x.startswith("k") or x == "draft position":
        xaxis["dtick"] = 1  # integer ticks for k
    # the title above the plot area (paper y = 1, anchored at its bottom), its lines pushing the top margin
    # (automargin): a title wrapped onto several lines grows downward into its own margin, never over the data
    base = dict(title={"text": title, "font": {"size": 14}, "x": 0, "xref": "container", "xanchor": "left",
                       "y": 1, "yref": "paper", "yanchor": "bottom", "pad": {"b": 12, "l": 10}, "automargin": True},
                xaxis=xaxis, yaxis={"title": {"text": y}, "automargin": True},
                margin={"t": 30, "r": 20, "b": 20, "l": 60}, height=440,
                legend={"orientation": "h", "x": 0, "xref": "container", "xanchor": "left", "y": 0,
                        "yref": "container", "yanchor": "bottom"},
                hovermode="closest")
    for key, value in extra.items():
        base[key] = {**base[key], **value} if isinstance(value, dict) and isinstance(base.get(key), dict) else value
    return base


def label(sweep: dict) -> str:
    return f"{set_name(sweep['domain'])}, {sweep['mode']}"


# A median's "95% interval" is a percentile bootstrap over the prompts (summary.median_ci). Over few prompts it is not
# one: with n <= 5 its ends are the smallest and the largest value (a resample's median is the smallest with
# probability over 2.5%: 5.1% at n = 4), the range, which covers the median 87.5% of the time at n = 4. Below
# FEW_PROMPTS a figure and a page (values.common.ci) name the interval for what it is, in the same words.
FEW_PROMPTS = 10


def interval_name(n: int) -> str:
    """What a median's interval over n prompts is: "95% interval", "range (n = 4)" or "bootstrap interval (n = 7)"."""
    return "95% interval" if n >= FEW_PROMPTS else f"range (n = {n})" if n <= 5 else f"bootstrap interval (n = {n})"


def interval_label(entries) -> str:
    """What the error bars of medians over several summaries are: the interval of the fewest prompts among them."""
    return interval_name(min(e.get("prompts", FEW_PROMPTS) for e in entries))
