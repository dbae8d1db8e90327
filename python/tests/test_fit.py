"""Fitting from Python: progress callbacks, stopping, settings, errors."""

import pytest
import torch

import grafx


@pytest.fixture(scope="module")
def song():
    return grafx.demo_song(sample_rate=16000, seconds=3.0, seed=1)


def test_fit_reports_progress_and_lowers_the_loss(song):
    seen = []
    fitter = grafx.fit(song["console"], song["tracks"], song["mix"], song["sample_rate"],
                       num_steps=12, crop_seconds=2.0, skip_seconds=0.25, lr=0.05,
                       final_lr_ratio=1.0, callback=lambda p: seen.append(p))
    assert [p["step"] for p in seen] == list(range(1, 13))
    assert all(p["num_steps"] == 12 and p["learning_rate"] == pytest.approx(0.05) for p in seen)
    history = fitter.history
    assert len(history) == 12 and history[-1]["loss"] < history[0]["loss"]
    parameters = fitter.detached_parameters()
    mix = fitter.render_mix()
    assert mix.shape == song["mix"].shape
    check = grafx.MixLoss(sample_rate=song["sample_rate"]).terms(mix, song["mix"])["total"]
    assert fitter.evaluate()["total"].item() == pytest.approx(check.item(), rel=1e-3)
    processors = grafx.make_processors(song["console"], song["sample_rate"])
    grafx.check_parameters(song["console"], processors, parameters)


def test_callback_false_stops_and_errors_propagate(song):
    fitter = grafx.fit(song["console"], song["tracks"], song["mix"], song["sample_rate"],
                       num_steps=50, crop_seconds=1.0, skip_seconds=0.1,
                       callback=lambda p: p["step"] < 2)
    assert fitter.steps_done == 2

    def failing(progress):
        raise ValueError("stop here")
    with pytest.raises(ValueError, match="stop here"):
        grafx.fit(song["console"], song["tracks"], song["mix"], song["sample_rate"],
                  num_steps=5, crop_seconds=1.0, skip_seconds=0.1, callback=failing)


def test_settings_and_errors(song):
    with pytest.raises(TypeError, match="learning_rate"):
        grafx.Fitter(song["console"], song["tracks"], song["mix"], 16000, learning_rate=0.1)
    with pytest.raises(grafx.FitError) as error:
        grafx.Fitter(song["console"], song["tracks"][:2], song["mix"], 16000)
    assert error.value.code == "grafx.fit.data"
    fitter = grafx.Fitter(song["console"], song["tracks"], song["mix"], 16000, num_steps=3,
                          warmup_steps=2, crop_seconds=1.0, skip_seconds=0.1)
    fitter.run()
    assert fitter.steps_done == 3
    timed = grafx.fit(song["console"], song["tracks"], song["mix"], 16000,
                      time_budget_minutes=0.02, crop_seconds=1.0, skip_seconds=0.1)
    assert 1 <= timed.steps_done < 1000


def test_initialisation_and_learning_rate_groups(song):
    # From the data by default: the gates start at -50 dB, where the specs' values do not.
    started = grafx.Fitter(song["console"], song["tracks"], song["mix"], 16000, num_steps=2,
                           crop_seconds=1.0, skip_seconds=0.1, learning_rates={"eq": 0.0},
                           stages=[(0.5, {"gain_pan", "dry_wet"})])
    plain = grafx.Fitter(song["console"], song["tracks"], song["mix"], 16000,
                         initialise_starts=False, initialise_gains=False)
    raw_started = started.initial_parameters["noise_gate"]["log_threshold"]
    raw_plain = plain.initial_parameters["noise_gate"]["log_threshold"]
    assert not torch.allclose(raw_started, raw_plain)
    eq = started.initial_parameters["eq"]["log_magnitude"].clone()
    started.run()
    assert torch.equal(started.detached_parameters()["eq"]["log_magnitude"], eq)  # frozen
    with pytest.raises(grafx.FitError, match="names no parameter"):
        grafx.Fitter(song["console"], song["tracks"], song["mix"], 16000,
                     learning_rates={"nothing": 0.1})


def test_ctrl_c_stops_a_fit_with_keyboard_interrupt(tmp_path):
    import signal
    import subprocess
    import sys
    import time
    script = tmp_path / "fit.py"
    script.write_text(
        "import signal, grafx\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "song = grafx.demo_song(sample_rate=16000, seconds=3.0)\n"
        "print('fitting', flush=True)\n"
        "try:\n"
        "    grafx.fit(song['console'], song['tracks'], song['mix'], 16000, num_steps=10**6,\n"
        "              crop_seconds=1.0, skip_seconds=0.1)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n")
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "fitting"
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 0 and output.strip() == "interrupted"


def test_automation_fits_curves_after_a_static_part(song):
    fitter = grafx.Fitter(song["console"], song["tracks"], song["mix"], song["sample_rate"],
                          num_steps=6, crop_seconds=1.0, skip_seconds=0.1,
                          automate={"gain_pan": []}, automation_rate=5.0, automation_start=0.5)
    assert not fitter.curves_live
    static = fitter.rendered_graph()  # no automation while the static part runs
    assert not any(static.node(i)["automated"] for i in static.nodes())
    fitter.run()
    assert fitter.curves_live
    assert fitter.graph.automation == (5.0, 16)  # 3 s at 5 points per second
    curves = fitter.rendered_parameters()["gain_pan"]["log_gain@curve"]
    assert curves.shape[1] == 16 and torch.isfinite(curves).all()
    with pytest.raises(grafx.FitError, match="gain_pan automates"):
        grafx.Fitter(song["console"], song["tracks"], song["mix"], song["sample_rate"],
                     automate={"gain_pan": ["log_ratio"]})


def test_automation_from_the_first_step(song):
    # automation_start 0 (inside its range): the curves train from the start, flat at the
    # initialised values; it failed naming an internal C++ field.
    fitter = grafx.Fitter(song["console"], song["tracks"], song["mix"], song["sample_rate"],
                          num_steps=2, crop_seconds=1.0, skip_seconds=0.1,
                          automate={"gain_pan": []}, automation_start=0.0)
    assert fitter.curves_live
    fitter.run()
    assert fitter.steps_done == 2


def test_a_fitter_steps_once_at_a_time_and_hands_out_copies(song):
    fitter = grafx.Fitter(song["console"], song["tracks"], song["mix"], song["sample_rate"],
                          num_steps=3, crop_seconds=1.0, skip_seconds=0.1)
    # A step asked for while one runs (here from the progress callback; another thread alike).
    with pytest.raises(grafx.FitError) as error:
        fitter.run(lambda p: fitter.step())
    assert error.value.code == "grafx.fit.busy"
    assert fitter.steps_done == 1  # the step that was running completed; nothing else ran
    fitter.run()
    assert fitter.steps_done == 3
    # Its graph, and a plan's, are copies: editing one changes nothing they render.
    graph = fitter.graph
    graph.remove(graph.nodes()[-1])
    assert fitter.graph.num_nodes == graph.num_nodes + 1
    plan = grafx.compute_render_plan(song["console"])
    plan_graph = plan.graph
    plan_graph.remove(plan_graph.nodes()[-1])
    assert plan.graph.num_nodes == plan_graph.num_nodes + 1


def test_fit_settings_name_every_keyword_option_and_flag_once(cli):
    import subprocess

    settings = grafx.fit_settings()
    names = [s["name"] for s in settings]
    assert len(names) == len(set(names)) >= 20
    options = grafx.FitOptions()
    for s in settings:
        assert getattr(options, s["name"]) == s["default"], s["name"]
        assert s["command_line"] == "--" + s["name"].replace("_", "-")
    with pytest.raises(grafx.FitError, match="crop_seconds: expected a finite crop length above 0 s"):
        options.crop_seconds = 0
    with pytest.raises(grafx.FitError, match="num_steps: expected a whole number"):
        options.num_steps = 2.5
    assert options.crop_seconds == 3.8, "a refused value changes nothing"
    # Settings that change the steps must match on resume; the length of a fit may change.
    fixed = {s["name"] for s in settings if s["same_on_resume"]}
    assert {"lr", "seed", "max_gradient_norm", "final_lr_ratio"} <= fixed
    assert not fixed & {"num_steps", "time_budget_seconds", "schedule_method"}
    # grafx fit's --help shows every setting by its name, and its older names beside it.
    shown = subprocess.run([cli, "fit", "--help"], capture_output=True, text=True).stdout
    for s in settings:
        assert ",".join([s["command_line"]] + s["aliases"]) in shown, s["name"]


def test_the_fitting_docs_list_every_setting():
    import pathlib

    docs = (pathlib.Path(__file__).parents[2] / "docs" / "fitting.md").read_text()
    for s in grafx.fit_settings():
        assert f"| `{s['name']}` | `{s['command_line']}` |" in docs, s["name"]
