"""The Playground in a real browser: its controls, its statistics, and that its JS rule is the Python rule.

The JS rule (docs/assets/playground.js) and `specdec.verify_draft` get the same (p, q, drafts, uniforms) and
must emit the same tokens; the JS exact output distribution must equal `specdec_site.exactness.exact.first_token_distribution`.
Also: every page of the site fits a 375 px wide screen, and the controls work from the keyboard.
"""

from __future__ import annotations

import contextlib
import json
import re

import pytest
import torch
from browser import ROOT, needs_chromium, open_page, settle, shot

from specdec import verify_block, verify_draft
from specdec_site.exactness.exact import first_token_distribution
from specdec_site.exactness.mutants import naive_rule

pytestmark = [needs_chromium, pytest.mark.browser]

PAGES = ["", "visualizer/", "playground/", "benchmark/", "benchmark-details/", "math/", "choosing-k/", "exactness/", "notebooks/walkthrough/",
         "reproduce/",
         "source/"]


@pytest.fixture(scope="module")
def playground(site, browser):
    page, log = open_page(browser, site + "playground/")
    page.wait_for_selector("#pg-rule-chart .main-svg")
    yield page, log
    assert log["errors"] == [], log["errors"]
    foreign = [u for u in log["requests"] if not u.startswith(site) and not u.startswith("data:")]
    assert foreign == [], foreign
    page.close()


def chart(page, div_id):
    return page.evaluate(f"() => JSON.stringify(document.getElementById('{div_id}').data)")


def random_cases(n, seed):
    gen = torch.Generator().manual_seed(seed)
    cases = []
    for i in range(n):
        V, k = int(torch.randint(2, 8, (1,), generator=gen)), i % 3 + 1
        p = torch.softmax(torch.randn(k + 1, V, generator=gen, dtype=torch.float64) * 2, -1)
        q = torch.softmax(torch.randn(k, V, generator=gen, dtype=torch.float64) * 2, -1)
        if i % 4 == 0:  # sparse rows: supports that only partly overlap
            p[:, 0] = 0
            q[:, -1] = 0
            p, q = p / p.sum(-1, keepdim=True), q / q.sum(-1, keepdim=True)
        drafts = torch.stack([torch.multinomial(q[j], 1, generator=gen)[0] for j in range(k)])
        uniforms = torch.rand(k, generator=gen, dtype=torch.float64)
        cases.append((p, q, drafts, uniforms, float(torch.rand(1, generator=gen, dtype=torch.float64))))
    return cases


def inverse_cdf(probs: torch.Tensor, u: float) -> int:
    """The same inverse-CDF draw as the page's drawIndex."""
    acc = 0.0
    for i, x in enumerate(probs.tolist()):
        acc += x
        if u < acc:
            return i
    return max(i for i, x in enumerate(probs.tolist()) if x > 0)


@pytest.mark.parametrize("rule", ["correct", "naive"])
def test_js_rule_emits_the_same_tokens_as_verify_draft(playground, rule):
    page, _ = playground
    cases = random_cases(150, seed=3 if rule == "correct" else 4)
    payload = [{"p": p.tolist(), "q": q.tolist(), "drafts": d.tolist(), "u": u.tolist(), "uExtra": ux}
               for p, q, d, u, ux in cases]
    js = page.evaluate("""([cases, rule]) => cases.map(c => window.specdecPlayground.verify(
        c.p, c.q, c.drafts, c.u, c.uExtra, rule))""", [payload, rule])
    for (p, q, drafts, uniforms, u_extra), got in zip(cases, js):
        with naive_rule() if rule == "naive" else contextlib.nullcontext():
            result = verify_draft(drafts, q, p, torch.Generator(), uniforms=uniforms)
        n = result.n_accepted
        source = result.residual if result.residual is not None else p[n]
        tokens = drafts[:n].tolist() + [inverse_cdf(source, u_extra)]
        assert got["n_accepted"] == n and got["tokens"] == tokens
        assert got["accept_probs"] == pytest.approx(result.accept_probs.tolist(), abs=1e-12)
        if result.residual is not None:
            assert got["residual"] == pytest.approx(result.residual.tolist(), abs=1e-12)


@pytest.mark.parametrize("rule", ["correct", "naive"])
def test_js_exact_output_equals_first_token_distribution(playground, rule):
    page, _ = playground
    cases = random_cases(120, seed=5)
    payload = [{"p": p[0].tolist(), "q": q[0].tolist()} for p, q, *_ in cases]
    js = page.evaluate("""([cases, rule]) => cases.map(c => window.specdecPlayground.exactOutput(c.p, c.q, rule))""",
                       [payload, rule])
    worst = 0.0
    for (p, q, *_), got in zip(cases, js):
        with naive_rule() if rule == "naive" else contextlib.nullcontext():
            expected = first_token_distribution(p[:2], q[:1])
        worst = max(worst, float((torch.tensor(got, dtype=torch.float64) - expected).abs().max()))
    assert worst < 1e-9


def test_sliders_change_the_plotted_data(playground):
    page, _ = playground
    page.select_option("#pg-preset", "0")
    before = chart(page, "pg-rule-chart")
    sliders = page.eval_on_selector_all("#pg-sliders input[type=range]", "es => es.map(e => e.id)")
    assert len(sliders) == 12, sliders  # one per token, for p and for q
    for slider_id in sliders:
        page.fill(f"#{slider_id}", "0.8")
        after = chart(page, "pg-rule-chart")
        assert after != before, slider_id
        before = after
        row = "p" if slider_id.startswith("pg-p-") else "q"
        total = page.evaluate(f"() => window.specdecPlayground.panels[0].{row}.reduce((a, b) => a + b, 0)")
        assert total == pytest.approx(1.0), "a row no longer sums to one"
    speed_before = chart(page, "pg-speedup-chart")
    for slider_id in ("pg-alpha", "pg-c", "pg-k", "pg-v"):
        page.fill(f"#{slider_id}", page.eval_on_selector(f"#{slider_id}", "e => String((+e.min + +e.max) / 2)"))
        now = chart(page, "pg-speedup-chart")
        assert now != speed_before, slider_id
        speed_before = now
    assert "Eq. (8)" in page.inner_text("#pg-speedup-readout")


def test_sampling_passes_with_the_rule_and_fails_with_the_wrong_residual(playground):
    page, _ = playground
    page.select_option("#pg-preset", "2")  # the counterexample
    page.fill("#pg-n", "100000")
    page.select_option("#pg-rule", "correct")
    page.click("#pg-sample")
    correct = float(page.get_attribute("#pg-sample-result", "data-pvalue"))
    first = chart(page, "pg-rule-chart")
    page.click("#pg-sample")  # same seed, same draws
    assert chart(page, "pg-rule-chart") == first
    page.select_option("#pg-rule", "naive")
    page.click("#pg-sample")
    wrong = float(page.get_attribute("#pg-sample-result", "data-pvalue"))
    assert correct > 1e-3, page.inner_text("#pg-sample-result")
    assert wrong < 1e-6, page.inner_text("#pg-sample-result")
    page.select_option("#pg-rule", "correct")


def test_degenerate_input_shows_a_message_not_a_broken_plot(playground):
    page, log = playground
    page.select_option("#pg-preset", "0")
    # The sliders renormalise, so q cannot reach all-zero through them; set it directly.
    page.evaluate("() => { const p = window.specdecPlayground.panels[0]; p.q = p.q.map(() => 0); p.render(); }")
    assert "q has no mass" in page.inner_text("#pg-rule-message")
    page.select_option("#pg-preset", "0")  # q = p: no residual needed
    assert "every draft is accepted" in page.inner_text("#pg-beta")
    page.fill("#pg-n", "5")
    page.click("#pg-sample")
    assert "N must be" in page.inner_text("#pg-sample-result")
    page.fill("#pg-n", "100000")
    assert log["errors"] == []


def test_keyboard_operates_the_controls(playground):
    page, _ = playground
    page.select_option("#pg-preset", "0")
    page.focus("#pg-p-1")
    before = float(page.input_value("#pg-p-1"))
    page.keyboard.press("ArrowRight")
    assert float(page.input_value("#pg-p-1")) > before
    page.focus("#pg-n")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.id") == "pg-sample"
    page.keyboard.press("Enter")
    assert "draws" in page.inner_text("#pg-sample-result")
    for control in page.query_selector_all(".pg-panel input, .pg-panel select, .pg-panel button"):
        has_label = page.evaluate("""e => !!(e.getAttribute('aria-label') || (e.id && document.querySelector(`label[for="${e.id}"]`))
            || e.textContent.trim())""", control)
        assert has_label, control.get_attribute("id")


def test_race_replays_the_measured_run(playground):
    page, _ = playground
    data = json.loads(page.evaluate("() => document.getElementById('specdec-playground-data').content.textContent"))
    run = data["race"]["runs"][0]
    assert all(r["steps"][-1]["end"] == r["spec_seconds"] for r in data["race"]["runs"])  # the last step ends the run
    page.select_option("#pg-race-speed", "4")
    page.click("#pg-race-play")
    page.wait_for_function("() => document.getElementById('pg-race-status').textContent.includes('as measured')",
                           timeout=int(max(run["target_seconds"], run["spec_seconds"]) / 4 * 1000 + 20000))
    ratio = f"{run['target_seconds'] / run['spec_seconds']:.2f}×"
    assert ratio in page.inner_text("#pg-race-status")
    fates = page.evaluate("() => Array.from(document.querySelectorAll('#pg-lane-spec .pg-tok')).map(s => s.title)")
    assert fates and set(fates) <= {"accepted", "bonus", "resampled"}
    assert page.locator("#pg-lane-target .pg-tok").count() == len(run["tokens"])
    shot(page, "playground.png")


def test_a_run_where_speculation_was_slower_plays_to_its_end(playground):
    """A recorded run may be slower with speculation (a prompt where the draft guesses badly): the race goes on
    until both lanes are done, and says so (it stopped at the target's time, leaving the speculative lane unfinished)."""
    page, _ = playground
    n = page.evaluate("""() => { const panel = document.getElementById('pg-race-panel')._specdec;
        const run = panel.runs[0], slow = 2 * run.target_seconds / run.spec_seconds;  // speculation twice as slow
        panel.runs.push(Object.assign({}, run, {label: 'slower (test)', spec_seconds: run.spec_seconds * slow,
          steps: run.steps.map(s => Object.assign({}, s, {end: s.end * slow}))}));
        panel.load(panel.runs.length - 1); panel.speed = 8; panel.toggle(); return run.tokens.length; }""")
    page.wait_for_function("() => document.getElementById('pg-race-play').textContent === 'Play'", timeout=60000)
    assert "speculation was slower here" in page.inner_text("#pg-race-status")
    assert page.locator("#pg-lane-spec .pg-tok").count() == n == page.locator("#pg-lane-target .pg-tok").count()
    page.evaluate("() => { const panel = document.getElementById('pg-race-panel')._specdec; panel.runs.pop(); panel.load(0); }")


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p or "home")
def test_every_page_fits_a_phone_screen(loaded, path):
    page, log = loaded(path, 375)
    settle(page)  # the charts redrawn for the width they measured
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= 375, f"{path or 'home'} is {width} px wide at 375 px"
    assert log["errors"] == []
    if path in ("playground/", "visualizer/"):
        shot(page, f"phone_{path.strip('/')}.png")


def test_playground_rethemes_with_the_palette(playground):
    page, log = playground
    color = lambda: page.evaluate("() => document.getElementById('pg-speedup-chart')._fullLayout.font.color")  # noqa: E731
    first = color()
    page.click("label.md-header__button[for^='__palette']:visible")
    page.wait_for_function(f"document.getElementById('pg-speedup-chart')._fullLayout.font.color !== {json.dumps(first)}")
    assert log["errors"] == []


def test_visualizer_navigation_is_one_row_and_tick_labels_are_readable(loaded):
    page, log = loaded("visualizer/", 375)
    page.wait_for_selector("#sv-chart-pq .main-svg")
    tops = [page.locator(sel).bounding_box()["y"] for sel in ("#sv-prev", "#sv-slider", "#sv-next")]
    assert max(tops) - min(tops) < 12, f"prev / slider / next are not on one row: {tops}"
    layout = page.evaluate("() => document.getElementById('sv-chart-pq').layout.xaxis")
    assert layout["tickangle"] == 0 and all(len(t.replace(" ◀", "")) <= 8 for t in layout["ticktext"])
    assert not any(t.strip() == "" for t in layout["ticktext"]), "a whitespace token has an invisible label"
    assert log["errors"] == []


# ---------------------------------------------------------------- what a careful reader tripped over (issue 26)


def test_the_wrong_rule_shows_what_it_resamples_from(playground):
    """The residual column and its bar follow the selected rule (they showed norm(max(0, p - q)) for both)."""
    page, _ = playground
    page.select_option("#pg-preset", "2")  # the counterexample
    page.select_option("#pg-rule", "correct")
    correct = json.loads(chart(page, "pg-rule-chart"))[2]["y"]
    page.select_option("#pg-rule", "naive")
    wrong_trace = json.loads(chart(page, "pg-rule-chart"))[2]
    assert wrong_trace["y"] != pytest.approx(correct, abs=1e-6) and "wrong rule" in wrong_trace["name"]
    assert "resampled (wrong rule)" in page.inner_text("#pg-rule-panel .pg-table-wrap")
    assert correct == pytest.approx([0, 1, 0, 0, 0], abs=1e-9)  # norm(max(0, p - q)) of eq. (9)'s counterexample
    page.select_option("#pg-rule", "correct")


def test_a_result_leaves_the_screen_when_the_rule_or_preset_changes(playground):
    page, _ = playground
    page.select_option("#pg-preset", "2")
    page.fill("#pg-n", "10000")
    page.click("#pg-sample")
    assert "draws" in page.inner_text("#pg-sample-result")
    page.select_option("#pg-rule", "naive")
    assert page.inner_text("#pg-sample-result").strip() == ""
    page.click("#pg-sample")
    page.select_option("#pg-preset", "0")
    assert page.inner_text("#pg-sample-result").strip() == ""
    page.select_option("#pg-rule", "correct")


def test_a_one_token_target_is_not_reported_as_a_chi_square_test(playground):
    page, _ = playground
    page.select_option("#pg-preset", "0")
    page.evaluate("() => { const p = window.specdecPlayground.panels[0]; p.p = p.p.map((x, i) => i === 0 ? 1 : 0); p.render(); }")
    page.fill("#pg-n", "10000")
    page.click("#pg-sample")
    text = page.inner_text("#pg-sample-result")
    assert "0 degrees of freedom" not in text and "consistent with p" not in text
    assert "every draw must be" in text and "10000 of 10000 were" in text
    page.select_option("#pg-preset", "0")


def test_the_calculator_shows_the_measurement_beside_the_theory_and_says_when_speculation_does_not_pay(playground):
    page, _ = playground
    page.select_option("#pg-speedup-preset", "0")
    names = [t["name"] for t in json.loads(chart(page, "pg-speedup-chart"))]
    assert names[:2] == ["eq. (7): free verify", "eq. (8): with the verify cost"], names
    measured = [n for n in names if n.startswith("measured here")]
    assert len(measured) == 1 and "code" in measured[0], names  # the preset's domain only: a short legend
    assert len(names) <= 6, names
    readout = page.inner_text("#pg-speedup-readout")
    assert "Eq. (8)" in readout and "Measured:" in readout and "come in runs" not in readout
    page.select_option("#pg-speedup-preset", "1")  # another domain's preset: its own measurement
    names = [t["name"] for t in json.loads(chart(page, "pg-speedup-chart"))]
    assert [n for n in names if n.startswith("measured here")] != measured
    page.evaluate("() => { const s = document.getElementById('pg-alpha'); s.value = '0'; s.dispatchEvent(new Event('input')); }")
    readout = page.inner_text("#pg-speedup-readout")
    assert "speculation does not pay here" in readout and "best k is 1," not in readout
    plot_height = page.evaluate("() => document.querySelector('#pg-speedup-chart .nsewdrag').getBoundingClientRect().height")
    assert plot_height >= 200, f"the plot area is {plot_height} px tall"


def test_the_calculator_presets_are_the_tested_acceptance(playground):
    """The presets carry â (accepted ÷ tested), never the draft yield (accepted ÷ drafted): issue 43."""
    from specdec_site.acceptance import tested_acceptance

    page, _ = playground
    data = json.loads(page.evaluate("() => document.getElementById('specdec-playground-data').content.textContent"))
    sweeps = json.loads((ROOT / "docs" / "data" / "cpu" / "policies.json").read_text())["sweeps"]
    for preset, sweep in zip(data["speedup"]["presets"], sweeps):
        best = max(sweep["spec"], key=lambda r: r["speedup"]["median"])
        assert preset["alpha"] == round(tested_acceptance(best), 2) != round(best["alpha"], 2), preset


def test_the_guided_exercises_show_what_the_page_says(playground):
    """The Playground's "Try this, in order": each step's observation, as the page states it."""
    page, _ = playground
    beta = lambda: page.inner_text("#pg-beta")  # noqa: E731
    tv = lambda: float(re.search(r"TV = (\d\.\d+e[+-]\d+)", beta()).group(1))  # noqa: E731
    # 1. q = p: every draft accepted, no residual
    page.select_option("#pg-preset", "0")
    assert "β = Σ min(p, q) = 1.000" in beta() and "every draft is accepted" in beta()
    # 2. disjoint supports: nothing accepted, the output still p
    page.select_option("#pg-preset", "1")
    assert "β = Σ min(p, q) = 0.000" in beta() and tv() < 1e-12
    # 3. the counterexample: the wrong rule's output is not p, and sampling says so; the correct rule passes
    page.select_option("#pg-preset", "2")
    page.select_option("#pg-rule", "naive")
    assert tv() > 0.01
    page.fill("#pg-n", "100000")
    page.click("#pg-sample")
    assert float(page.get_attribute("#pg-sample-result", "data-pvalue")) < 1e-6
    page.select_option("#pg-rule", "correct")
    assert tv() < 1e-12
    page.click("#pg-sample")
    assert float(page.get_attribute("#pg-sample-result", "data-pvalue")) > 1e-3
    # 4. c = 0: the best k of eq. (8) grows
    best = lambda: int(re.search(r"(?:best k is |at k = )(\d+)", page.inner_text("#pg-speedup-readout")).group(1))  # noqa: E731
    for slider, value in (("pg-alpha", "0.8"), ("pg-c", "0.2")):  # where the exercise starts: a useful draft
        page.fill(f"#{slider}", value)
        page.dispatch_event(f"#{slider}", "input")
    before = best()
    page.fill("#pg-c", "0")
    page.dispatch_event("#pg-c", "input")
    assert best() > before, page.inner_text("#pg-speedup-readout")
    # 5. the race, as the page loads it (its first run): the same text in both lanes, and the speculative lane first
    page.select_option("#pg-race-run", "0")  # an earlier test may have chosen another run; this loads the race anew
    run = json.loads(page.evaluate("() => document.getElementById('specdec-playground-data').content.textContent"))[
        "race"]["runs"][0]
    page.select_option("#pg-race-speed", "4")
    page.click("#pg-race-play")
    # the click starts this race at 0 s (loading the run stopped any earlier race and reset its clock)
    assert page.inner_text("#pg-race-status") == "" and page.inner_text("#pg-race-play") == "Pause"
    # this race ends: the timer stops, both lanes complete, and the final status shows
    page.wait_for_function(f"""() => document.getElementById('pg-race-play').textContent === 'Play' &&
        ['target', 'spec'].every(lane =>
        document.querySelectorAll('#pg-lane-' + lane + ' .pg-tok').length === {len(run["tokens"])})""", timeout=120000)
    assert page.inner_text("#pg-race-status").startswith("Speculative decoding took")
    lanes = [page.inner_text(f"#pg-lane-{lane}") for lane in ("target", "spec")]
    assert lanes[0] == lanes[1]
    clocks = [float(page.inner_text(f"#pg-clock-{lane}").split()[0]) for lane in ("target", "spec")]
    assert clocks[1] < clocks[0], clocks


# ---------------------------------------------------------------- block verification (Sun et al. 2025)


def test_js_block_rule_emits_the_same_tokens_as_verify_block(playground):
    """The page's verifyBlock against the library's, draw for draw: the kept prefix, w_i and h_i, the residual."""
    page, _ = playground
    cases = random_cases(150, seed=5)
    payload = [{"p": p.tolist(), "q": q.tolist(), "drafts": d.tolist(), "u": u.tolist(), "uExtra": ux}
               for p, q, d, u, ux in cases]
    js = page.evaluate("""cases => cases.map(c => window.specdecPlayground.verifyBlock(
        c.p, c.q, c.drafts, c.u, c.uExtra))""", payload)
    for (p, q, drafts, uniforms, u_extra), got in zip(cases, js):
        result = verify_block(drafts, q, p, torch.Generator(), uniforms=uniforms)
        n = result.n_accepted
        source = result.residual if result.residual is not None else p[n]
        assert got["n_accepted"] == n and got["tokens"] == drafts[:n].tolist() + [inverse_cdf(source, u_extra)]
        assert got["weights"][1:] == pytest.approx(result.block_weights.tolist(), abs=1e-12)
        assert got["stop_probs"][1:] == pytest.approx(result.stop_probs.tolist(), abs=1e-12)
        if result.residual is not None:
            assert got["residual"] == pytest.approx(result.residual.tolist(), abs=1e-12)


def test_the_block_panel_toggles_the_rule_and_samples_it(playground):
    """Sun et al.'s example: 10/9, 11/9 and 12/9 expected accepted drafts, computed by the page as by the library
    (exactness_stage.block_example); the rule switch changes the table's columns; sampling either rule gives the
    target's distribution and its own expected count."""
    from specdec_site.stages.exactness import block_example

    page, _ = playground
    example = block_example()
    page.select_option("#pg-block-preset", "0")
    for key in ("token", "block", "ideal"):
        assert float(page.get_attribute("#pg-block-summary", f"data-{key}")) == pytest.approx(example[key], abs=1e-12)
    page.select_option("#pg-block-rule", "token")
    assert "min(1, p/q) at 1" in page.inner_text("#pg-block-table th >> nth=2")
    page.select_option("#pg-block-rule", "block")
    assert page.inner_text("#pg-block-table th >> nth=2") == "w1 / h1"
    rows = page.locator("#pg-block-table tr")
    assert rows.count() == 1 + len(example["blocks"])
    page.fill("#pg-block-n", "100000")
    for rule in ("block", "token"):
        page.select_option("#pg-block-rule", rule)
        assert page.inner_text("#pg-block-result") == ""  # a result leaves when the rule changes
        page.click("#pg-block-sample")
        pvalue = float(page.get_attribute("#pg-block-result", "data-pvalue"))
        accepted = float(page.get_attribute("#pg-block-result", "data-accepted"))
        assert pvalue > 1e-3, page.inner_text("#pg-block-result")
        # 100,000 steps: the mean of a count in [0, 2] within 0.02 of its expectation (about 8 standard errors)
        assert accepted == pytest.approx(example["block" if rule == "block" else "token"], abs=0.02)
    page.fill("#pg-block-n", "12")
    page.click("#pg-block-sample")
    assert page.inner_text("#pg-block-result").startswith("N must be a whole number")
    page.select_option("#pg-block-preset", "1")
    token, block = (float(page.get_attribute("#pg-block-summary", f"data-{k}")) for k in ("token", "block"))
    assert block >= token - 1e-12
