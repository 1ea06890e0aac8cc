"""Optuna study driver with a deterministic evaluator (a closed-form function of the config), so the
OFAT bookkeeping, resume, pruning and Pareto logic are checked exactly."""

from __future__ import annotations

import json

import optuna
import pytest

from hublab.tuning.space import space_from_pipeline
from hublab.tuning.study import StudySpec, TrialRequest, run_study

BASE = {"llm": {"backend": "none"},
        "retriever": {"type": "hublink", "params": {"alpha": 5, "hubs": 10, "filter": True}}}
SPACE = space_from_pipeline({
    "retriever.params.alpha": [0, 3, 9],
    "retriever.params.hubs": [10, 20, 30],
    "retriever.params.filter": [True, False],
})


def score(cfg) -> dict[str, float]:
    p = cfg["retriever"]["params"]
    recall = 0.5 - abs(p["alpha"] - 5) * 0.02 + (p["hubs"] - 10) * 0.003 + (0.1 if not p["filter"] else 0)
    hits = 0.4 - abs(p["alpha"] - 5) * 0.01 - (0.2 if not p["filter"] else 0)
    return {"recall_triples": recall, "hit_at_10_triples": hits, "runtime": p["hubs"] * 0.1}


class Counting:
    def __init__(self, fail_on: str | None = None):
        self.calls: list[str] = []
        self.fail_on = fail_on

    def __call__(self, req: TrialRequest) -> dict[str, float]:
        if req.name == self.fail_on:
            self.fail_on = None
            raise RuntimeError("simulated crash")
        self.calls.append(req.name)
        return score(req.config)


def test_ofat_runs_exact_list_and_picks_by_recall_then_hits(tmp_path):
    ev = Counting()
    spec = StudySpec("ofat", "ofat", storage=f"sqlite:///{tmp_path}/o.db")
    res = run_study(spec, BASE, SPACE, ev)
    assert ev.calls == ["base", "retriever.params.alpha=0", "retriever.params.alpha=3", "retriever.params.alpha=9",
                        "retriever.params.hubs=20", "retriever.params.hubs=30", "retriever.params.filter=false"]
    assert res.chosen == {"retriever.params.alpha": 5, "retriever.params.hubs": 30, "retriever.params.filter": False}
    row = next(r for r in res.table if r.factor == "hubs" and r.value == 30)
    assert row.recall == pytest.approx(0.56) and row.delta_recall_pct == pytest.approx(12.0)


def test_ofat_resume_skips_finished_trials(tmp_path):
    storage = f"sqlite:///{tmp_path}/o.db"
    ev = Counting(fail_on="retriever.params.hubs=20")
    with pytest.raises(RuntimeError):
        run_study(StudySpec("s", "ofat", storage=storage), BASE, SPACE, ev)
    first = list(ev.calls)
    assert first == ["base", "retriever.params.alpha=0", "retriever.params.alpha=3", "retriever.params.alpha=9"]
    res = run_study(StudySpec("s", "ofat", storage=storage), BASE, SPACE, ev)
    # only the unfinished trials run (the crashed one is re-queued behind those still waiting)
    assert sorted(ev.calls[len(first):]) == ["retriever.params.filter=false", "retriever.params.hubs=20",
                                             "retriever.params.hubs=30"]
    assert res.chosen["retriever.params.hubs"] == 30
    # a third call finds everything done and evaluates nothing
    run_study(StudySpec("s", "ofat", storage=storage), BASE, SPACE, ev)
    assert len(ev.calls) == 7


def test_tpe_prunes_on_partial_results(tmp_path):
    def ev(req: TrialRequest) -> dict[str, float]:
        final = score(req.config)["recall_triples"]
        for step in range(1, 4):
            if req.report is not None and req.report(step, final * step / 3):
                return {"_pruned": 1.0}
        return score(req.config)

    res = run_study(StudySpec("t", "tpe", storage=f"sqlite:///{tmp_path}/t.db", n_trials=15, seed=1,
                              pruner="median"), BASE, SPACE, ev)
    states = [t.state for t in res.study.get_trials()]
    assert states.count(optuna.trial.TrialState.COMPLETE) >= 3
    assert optuna.trial.TrialState.PRUNED in states
    assert res.best is not None and res.best["metrics"]["recall_triples"] == max(
        t.value for t in res.study.get_trials() if t.state == optuna.trial.TrialState.COMPLETE)


def test_nsga2_pareto_front_is_non_dominated(tmp_path):
    spec = StudySpec("n", "nsga2", storage=f"sqlite:///{tmp_path}/n.db", n_trials=16,
                     objectives=["recall_triples", "runtime"], seed=0)
    res = run_study(spec, BASE, SPACE, lambda req: score(req.config))
    assert res.pareto
    pts = [tuple(p["values"]) for p in res.pareto]
    for r, t in pts:
        assert not any((r2 >= r and t2 <= t) and (r2, t2) != (r, t) for r2, t2 in pts)


def test_nsga2_needs_two_objectives(tmp_path):
    from hublab.errors import InputError

    with pytest.raises(InputError):
        run_study(StudySpec("x", "nsga2", storage=f"sqlite:///{tmp_path}/x.db", n_trials=2), BASE, SPACE,
                  lambda r: score(r.config))


def test_parameters_have_real_distributions_and_objectives_are_named(tmp_path):
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    from hublab.tuning.space import Factor, optuna_param

    assert optuna_param(Factor("a", (0, 3, 9)), 5).distribution == IntDistribution(0, 9, step=1)
    assert optuna_param(Factor("h", (10, 20, 30)), 10).distribution == IntDistribution(10, 30, step=10)
    assert optuna_param(Factor("p", (0, 0.01, 0.1)), 0.05).distribution == FloatDistribution(0, 0.1)
    # a sampled float is used and written rounded: the last bits of TPE's arithmetic differ between CPUs
    sampled = optuna_param(Factor("p", (0, 0.01, 0.1)), 0.05)
    assert sampled.to_value(0.23722666177656299) == sampled.to_value(0.23722666177656296) == 0.237226661777
    assert optuna_param(Factor("a", (0, 3, 9)), 5).to_value(7) == 7
    assert optuna_param(Factor("f", (True, False)), True).distribution == CategoricalDistribution([True, False])
    assert optuna_param(Factor("s", ("x", "y")), "x").distribution == CategoricalDistribution(["x", "y"])
    assert optuna_param(Factor("k", (1, 2), kind="categorical"), 1).distribution == CategoricalDistribution([1, 2])
    llm = optuna_param(Factor("llm", ({"model": "a"}, {"model": "b"})), None)
    assert llm.encoded and llm.to_value(llm.to_param({"model": "b"})) == {"model": "b"}
    ranged = space_from_pipeline({"x": {"low": 1, "high": 100, "log": True, "values": [1, 10, 100]}}).factors[0]
    assert optuna_param(ranged, 10).distribution == IntDistribution(1, 100, log=True)

    res = run_study(StudySpec("d", "ofat", storage=f"sqlite:///{tmp_path}/d.db"), BASE, SPACE, Counting())
    t = res.study.trials[0]
    assert t.params == {"retriever.params.alpha": 5, "retriever.params.hubs": 10, "retriever.params.filter": True}
    assert isinstance(t.distributions["retriever.params.alpha"], IntDistribution)
    assert res.study.metric_names == ["recall_triples"]
    spec = StudySpec("n2", "nsga2", storage=f"sqlite:///{tmp_path}/n.db", n_trials=4,
                     objectives=["recall_triples", "runtime"])
    assert run_study(spec, BASE, SPACE, lambda r: score(r.config)).study.metric_names == ["recall_triples", "runtime"]


def test_ofat_n_trials_caps_one_invocation(tmp_path):
    storage = f"sqlite:///{tmp_path}/o.db"
    ev = Counting()
    res = run_study(StudySpec("s", "ofat", storage=storage, n_trials=3), BASE, SPACE, ev)
    assert ev.calls == ["base", "retriever.params.alpha=0", "retriever.params.alpha=3"] and res.ran == 3
    assert len(res.pending) == 4 and res.chosen == {}  # no factor has all its values measured yet
    res = run_study(StudySpec("s", "ofat", storage=storage, n_trials=2), BASE, SPACE, ev)
    assert res.chosen == {"retriever.params.alpha": 5} and len(res.pending) == 2
    res = run_study(StudySpec("s", "ofat", storage=storage), BASE, SPACE, ev)
    assert len(ev.calls) == 7 and not res.pending and len(res.chosen) == 3


def test_ofat_worker_never_creates_unplanned_trials(tmp_path):
    """With the queue empty, Optuna's ask() would sample a fresh (unplanned) trial; an OFAT worker gets
    NoPlannedTrialLeft instead (the race of two workers for the last queued trial)."""
    from hublab.tuning.storage import NoPlannedTrialLeft
    from hublab.tuning.study import open_study

    study = open_study(StudySpec("q", "ofat", storage=f"sqlite:///{tmp_path}/q.db"))
    backend = study._storage._backend  # noqa: SLF001
    backend.planned_only.add(study._study_id)  # noqa: SLF001
    study.enqueue_trial({"x": 1})
    assert study.ask().number == 0  # the queued trial
    with pytest.raises(NoPlannedTrialLeft):
        study.ask()
    assert len(study.trials) == 1


def test_worker_whose_trial_was_taken_over_goes_on(tmp_path):
    """A worker whose heartbeat stalled past the grace period finds its trial failed and re-queued by another
    worker when it finishes: Optuna refuses its result; the worker warns and goes on, the retry counts."""
    import warnings

    storage = f"sqlite:///{tmp_path}/o.db"
    taken: list[int] = []

    def ev(req: TrialRequest) -> dict[str, float]:
        if req.name == "retriever.params.alpha=0" and not taken:
            other = optuna.load_study(study_name="s", storage=storage)  # "another worker"
            mine = other.get_trials(states=(optuna.trial.TrialState.RUNNING,))[0]
            other._storage.set_trial_state_values(mine._trial_id, optuna.trial.TrialState.FAIL)  # noqa: SLF001
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=1)(other, other.trials[mine.number])
            taken.append(mine.number)
        return score(req.config)

    res = run_study(StudySpec("s", "ofat", storage=storage), BASE, SPACE, ev)
    states = [(t.user_attrs["ofat_key"], t.state.name) for t in res.study.trials]
    assert states.count(("retriever.params.alpha=0", "FAIL")) == 1
    assert states.count(("retriever.params.alpha=0", "COMPLETE")) == 1
    assert not res.pending and len(res.chosen) == 3


def test_a_study_is_not_resumed_on_another_base_configuration(tmp_path):
    """Resuming a finished study after the base pipeline changed would print the old trials as the new table
    (seen: `dvc repro tune` after a ranking change re-printed the previous defaults' numbers)."""
    from hublab.errors import InputError
    from hublab.tuning.orchestrate import base_identity
    from hublab.tuning.study import fresh_study

    storage = f"sqlite:///{tmp_path}/o.db"
    ident = base_identity(BASE, "gv1", "reduced_gv1", None)
    run_study(StudySpec("s", "ofat", storage=storage, identity=ident), BASE, SPACE, Counting())
    ev = Counting()
    run_study(StudySpec("s", "ofat", storage=storage, identity=ident), BASE, SPACE, ev)
    assert ev.calls == []  # same base: resumed, nothing to do

    changed = {**BASE, "retriever": {"type": "hublink", "params": {**BASE["retriever"]["params"], "alpha": 3}}}
    other = base_identity(changed, "gv1", "reduced_gv1", None)
    assert other != ident
    assert base_identity({**BASE, "search_space": {"x": [1]}}, "gv1", "reduced_gv1", None) == ident
    assert base_identity(BASE, "gv1", "reduced_gv1", 5) != ident  # --limit changes what a trial measures
    with pytest.raises(InputError, match="not comparable"):
        run_study(StudySpec("s", "ofat", storage=storage, identity=other), changed, SPACE, ev)
    assert ev.calls == []

    assert fresh_study(StudySpec("s", "ofat", storage=storage)) is True
    res = run_study(StudySpec("s", "ofat", storage=storage, identity=other), changed, SPACE, ev)
    assert ev.calls == ["base", "retriever.params.alpha=0", "retriever.params.alpha=9", "retriever.params.hubs=20",
                        "retriever.params.hubs=30", "retriever.params.filter=false"]  # measured again, on the new base
    assert res.chosen["retriever.params.alpha"] == 3
    assert fresh_study(StudySpec("none-such", "ofat", storage=storage)) is False


def test_a_study_is_not_joined_with_another_search_space(tmp_path):
    """Issue #29: a second worker (or a resume) with other factors or values would mix trials of two spaces in one
    study; it is refused before any trial, naming the factor and both value lists."""
    from hublab.errors import InputError
    from hublab.tuning.space import space_record

    storage = f"sqlite:///{tmp_path}/t.db"
    run_study(StudySpec("s", "tpe", storage=storage, n_trials=2, space=space_record(SPACE)), BASE, SPACE, Counting())
    other = space_from_pipeline({"retriever.params.alpha": [0, 3, 9, 12], "retriever.params.hubs": [10, 20, 30],
                                 "retriever.params.filter": [True, False]})
    ev = Counting()
    with pytest.raises(InputError, match=r"another search space \(retriever\.params\.alpha: study \[0, 3, 9\], "
                                         r"this command \[0, 3, 9, 12\]\)") as err:
        run_study(StudySpec("s", "tpe", storage=storage, n_trials=3, space=space_record(other)), BASE, other, ev)
    assert err.value.field == "study" and "--fresh" in str(err.value)
    assert ev.calls == []
    fewer = space_from_pipeline({"retriever.params.alpha": [0, 3, 9]})
    with pytest.raises(InputError, match=r"retriever\.params\.hubs: study \[10, 20, 30\], this command not a factor"):
        run_study(StudySpec("s", "tpe", storage=storage, n_trials=3, space=space_record(fewer)), BASE, fewer, ev)
    # the same space joins (a top-up of the same study)
    run_study(StudySpec("s", "tpe", storage=storage, n_trials=3, space=space_record(SPACE)), BASE, SPACE, ev)
    assert len(ev.calls) == 1


def test_a_trial_whose_worker_died_before_its_first_heartbeat_is_retried(tmp_path):
    """A worker killed between taking a trial (RUNNING) and its heartbeat thread's first beat leaves a trial with no
    heartbeat at all, which Optuna's own stale check skips: the next worker waited for it forever (a fresh-clone CI
    run hung so, in the kill -9 test). Now the next worker gives it a heartbeat, judges it stale after the grace
    period, and runs the retry: the study finishes, that trial FAIL once and COMPLETE once."""
    import dataclasses
    import threading

    from hublab.tuning.study import open_study

    spec = StudySpec("silent", "ofat", storage=f"sqlite:///{tmp_path}/s.db", heartbeat_interval=1, grace_period=2)
    run_study(dataclasses.replace(spec, n_trials=1), BASE, SPACE, Counting())  # one trial run, the rest queued
    dead = open_study(spec)
    taken = dead.ask()  # popped to RUNNING, and the "worker" is gone before any heartbeat
    assert dead.trials[taken.number].state == optuna.trial.TrialState.RUNNING

    out: dict = {}
    rerun = threading.Thread(target=lambda: out.update(res=run_study(spec, BASE, SPACE, Counting())), daemon=True)
    rerun.start()
    rerun.join(timeout=120)
    assert not rerun.is_alive(), "the rerun waited for the dead worker's trial (no heartbeat) and never finished"
    res = out["res"]
    key = taken.user_attrs["ofat_key"]
    states = [(t.user_attrs["ofat_key"], t.state.name) for t in res.study.trials]
    assert states.count((key, "FAIL")) == 1 and states.count((key, "COMPLETE")) == 1, states
    assert "RUNNING" not in {s for _, s in states} and not res.pending


def _per_question(cfg, n: int = 40) -> list[float]:
    """A config's value on each of ``n`` questions: its recall plus a fixed per-question difficulty."""
    base = score(cfg)["recall_triples"]
    return [base + ((q * 37) % 11 - 5) * 0.01 for q in range(n)]


def _wilcoxon_ev(req: TrialRequest) -> dict[str, float]:
    values = _per_question(req.config)
    for q in sorted(range(len(values)), key=lambda q: (q * 17) % len(values)):  # a fixed shuffled order
        if req.report is not None and req.report(q, values[q]):
            return {"_pruned": 1.0}
    return {**score(req.config), "recall_triples": sum(values) / len(values)}


def test_wilcoxon_prunes_worse_trials_and_keeps_the_unpruned_choice(tmp_path):
    """Per-question values paired by question: trials that are clearly worse stop early, and the chosen trial is the
    one an unpruned study of the same seed chooses."""
    pruned = run_study(StudySpec("w", "tpe", n_trials=12, seed=3, enqueue_base=True), BASE, SPACE, _wilcoxon_ev)
    full = run_study(StudySpec("f", "tpe", n_trials=12, seed=3, enqueue_base=True, prune=False), BASE, SPACE,
                     _wilcoxon_ev)
    states = [t.state for t in pruned.study.get_trials()]
    assert optuna.trial.TrialState.PRUNED in states  # some trials stopped early
    assert all(s == optuna.trial.TrialState.COMPLETE for s in (t.state for t in full.study.get_trials()))
    assert pruned.best["params"] == full.best["params"]
    assert pruned.best["values"] == pytest.approx(full.best["values"])


def test_a_trial_over_its_limit_is_infeasible_and_never_chosen(tmp_path):
    """--max-s-per-question as an Optuna constraint: the best-scoring configurations (many hubs) are too slow."""
    ev = Counting()
    res = run_study(StudySpec("c", "tpe", storage=f"sqlite:///{tmp_path}/c.db", n_trials=12, seed=0,
                              limits={"s_per_question": 2.5}), BASE, SPACE, ev)
    rows = {r["number"]: r for r in res.trials}
    slow = [r for r in rows.values() if r["state"] == "COMPLETE" and r["metrics"]["runtime"] > 2.5]
    assert slow and all(not r["feasible"] for r in slow)  # marked in the study's trials (trials.json)
    from hublab.tuning.report import write_outputs

    write_outputs(res, tmp_path / "out")  # trials.json is committed: no seconds in it, timings.json has them
    committed = json.loads((tmp_path / "out/trials.json").read_text())
    assert [r["feasible"] for r in committed] == [r["feasible"] for r in res.trials]
    assert all(not any(k.endswith("_s") or k == "runtime" for k in r["metrics"]) for r in committed)
    assert all("recall_triples" in r["metrics"] for r in committed if r["state"] == "COMPLETE")
    timings = json.loads((tmp_path / "out/timings.json").read_text())
    assert {int(n): t["runtime"] for n, t in timings.items()} == {
        r["number"]: r["metrics"]["runtime"] for r in res.trials if "runtime" in r["metrics"]}
    write_outputs(res, tmp_path / "bare", plots=False)  # a comparison's fold studies: the same record, no charts
    assert (tmp_path / "bare/trials.json").read_text() == (tmp_path / "out/trials.json").read_text()
    assert list((tmp_path / "out").glob("*.png")) and not list((tmp_path / "bare").glob("*.png*"))
    assert res.best is not None and res.best["feasible"] and res.best["metrics"]["runtime"] <= 2.5
    unbounded = max(r["values"][0] for r in rows.values() if r["values"])
    assert res.best["values"][0] < unbounded  # a better but too slow trial existed and was passed over


@pytest.mark.parametrize("spec, field", [(dict(pruner="halving"), "pruner"),
                                         (dict(limits={"s_per_question": 0}), "limits"),
                                         (dict(limits={"tokens": 5.0}), "limits")])
def test_bad_pruner_or_limit_is_refused(spec, field):
    from hublab.errors import InputError

    with pytest.raises(InputError) as e:
        StudySpec("x", "tpe", n_trials=2, **spec).validate()
    assert e.value.field == field


def test_topping_up_or_resuming_a_study_samples_new_parameters(tmp_path):
    """Issue #45 class 3: a TPE study run for 2 trials, then topped up to 5 (the documented way to extend it) gave
    trials 2-3 the parameters of trials 0-1: every process seeded its sampler alike. Each start of a study now
    reseeds from the seed and the start's number, so the top-up draws anew; a fresh study is unchanged."""
    space = space_from_pipeline({"retriever.params.alpha": {"low": 0.0, "high": 10.0},
                                 "retriever.params.hubs": {"low": 5, "high": 50}})
    db = f"sqlite:///{tmp_path}/top.db"
    first = run_study(StudySpec("top", "tpe", storage=db, n_trials=2, seed=4), BASE, space, Counting())
    more = run_study(StudySpec("top", "tpe", storage=db, n_trials=5, seed=4), BASE, space, Counting())
    params = [tuple(sorted(t["params"].items())) for t in more.trials]
    assert len(params) == 5 and len(set(params)) == 5, params  # no trial repeats an earlier one
    assert [t["params"] for t in first.trials] == [t["params"] for t in more.trials[:2]]
    fresh = run_study(StudySpec("again", "tpe", storage=db, n_trials=2, seed=4), BASE, space, Counting())
    assert [t["params"] for t in fresh.trials] == [t["params"] for t in first.trials]  # a fresh study: as before


def test_trials_json_holds_sampled_floats_to_twelve_digits():
    """TPE's samples differed between two runs of the same study in the last bit (the same choices, the same
    metrics): the committed trials.json holds them to 12 significant digits, so both runs write the same file."""
    from hublab.tuning.report import split_trials

    runs = [[{"number": 0, "params": {"k1": k1, "text": "labels", "n": 3}, "metrics": {"recall": 0.5}}]
            for k1 in (0.8007164470389543, 0.8007164470389545)]
    kept = [split_trials(r)[0] for r in runs]
    assert kept[0] == kept[1]
    assert kept[0][0]["params"] == {"k1": 0.800716447039, "text": "labels", "n": 3}
    assert kept[0][0]["metrics"] == {"recall": 0.5}


def test_a_trials_metrics_are_one_attribute_and_old_studies_still_read(tmp_path):
    """A trial's metrics are stored as one attribute (one storage write, not one per metric); a study written by
    an earlier HubLab, one ``m:<name>`` attribute per metric, is read the same."""
    from hublab.tuning.study import METRICS_ATTR, trial_metrics

    storage = f"sqlite:///{tmp_path}/o.db"
    res = run_study(StudySpec("s", "ofat", storage=storage), BASE, SPACE, Counting())
    study = optuna.load_study(study_name="s", storage=storage)
    base = next(t for t in study.trials if t.user_attrs["ofat_key"] == "base")
    assert not [k for k in base.user_attrs if k.startswith("m:")]
    assert base.user_attrs[METRICS_ATTR] == pytest.approx(score(BASE))
    assert trial_metrics(base) == pytest.approx(score(BASE))
    old = optuna.trial.create_trial(value=0.5, user_attrs={"m:recall_triples": 0.5, "m:runtime": 1.0})
    assert trial_metrics(old) == {"recall_triples": 0.5, "runtime": 1.0}
    assert res.table and all(r.recall is not None for r in res.table)



def test_reported_values_are_written_once_a_trial_and_decide_as_written_through(tmp_path):
    """A trial's per-question values are kept by its worker and written when the trial is read or ends (one
    transaction, not one a question): while it runs another process sees none of them; the study's every trial,
    state, value and stored per-question value are those of a study whose storage writes each at once (Optuna's
    in-memory storage), a pruned trial's value its last reported one."""
    url = f"sqlite:///{tmp_path}/w.db"
    seen_outside: list[int] = []

    def ev(req: TrialRequest) -> dict[str, float]:
        out = _wilcoxon_ev(req)
        if req.report is not None:
            outside = optuna.storages.RDBStorage(url)  # another process's view of the same file
            study_id = outside.get_study_id_from_name("kept")
            running = [t for t in outside.get_all_trials(study_id) if t.state.name == "RUNNING"]
            seen_outside.extend(len(t.intermediate_values) for t in running)
            outside.engine.dispose()
        return out

    kept = run_study(StudySpec("kept", "tpe", storage=url, n_trials=12, seed=3, enqueue_base=True), BASE, SPACE, ev)
    direct = run_study(StudySpec("direct", "tpe", n_trials=12, seed=3, enqueue_base=True), BASE, SPACE,
                       _wilcoxon_ev)
    assert seen_outside and not any(seen_outside)  # nothing written while the trial ran

    def record(study: optuna.Study) -> list[tuple]:
        return [(t.number, t.state.name, t.params, t.values, t.intermediate_values) for t in study.get_trials()]

    stored = optuna.load_study(study_name="kept", storage=url)  # read back from the file
    assert record(stored) == record(direct.study)
    assert record(kept.study) == record(direct.study)  # the writing process's own view, its kept values flushed
    pruned = [t for t in stored.get_trials() if t.state.name == "PRUNED"]
    assert pruned and all(t.values == [t.intermediate_values[t.last_step]] for t in pruned)


def test_values_kept_for_a_trial_another_worker_ended_are_dropped_and_the_study_reads_on(tmp_path):
    """A worker that looked dead (no heartbeat for the grace period) has its trial failed by another worker; its
    kept values then have no trial to go to. They are dropped, as Optuna drops a late report, and the worker can
    still read the study (kept values are not tried again at every read)."""
    from optuna.trial import TrialState

    from hublab.tuning.storage import make_storage

    url = f"sqlite:///{tmp_path}/s.db"
    mine = make_storage(url)
    study = optuna.create_study(study_name="s", storage=mine)
    trial = study.ask()
    trial.report(0.5, 0)
    trial.report(0.4, 1)
    other = optuna.storages.RDBStorage(url)
    other.set_trial_state_values(trial._trial_id, TrialState.FAIL)  # noqa: SLF001 - the id another worker sees
    other.engine.dispose()
    assert [t.state for t in study.get_trials()] == [TrialState.FAIL]  # read on, nothing raised
    assert study.get_trials()[0].intermediate_values == {}
    assert not mine._reported  # noqa: SLF001 - nothing left to try again
