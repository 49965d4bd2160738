"""`make bench`: scoring throughput vs a per-line Python baseline, sweep throughput and memory, the
monitor's history over a decade of weekly runs, the monitor's alarm calibrated by simulation.

Needs the Hindi dataset (BIASEVAL_DATA_DIR). Prints one line per measurement and the ratio to
its target; every number comes from this run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
import yaml

from benchmarks.drift_calibration import bench_drift
from benchmarks.scoring import bench_scoring

REPO = Path(__file__).resolve().parent.parent
PAPER = REPO / "conf" / "paper.yaml"


BENCH_OCCUPATIONS = 1000
BENCH_TARGETS = 20


def _expansion_config(tmp: Path, items: int) -> Path:
    """A template suite in the shape of OTSC at scale: 1,000 occupations × 20 target languages ×
    as many gender-cue variants as ``items`` needs; one identity system (an instant backend)."""
    lexicon = tmp / "lexicon.csv"
    if not lexicon.exists():
        with open(lexicon, "w", encoding="utf-8") as fh:
            fh.write("occupation,female_share,stereotype,en,en_article\n")
            for k in range(BENCH_OCCUPATIONS):
                share = k % 101
                stereotype = "female" if share > 50 else ("male" if share < 50 else "neutral")
                fh.write(f"occupation {k},{share},{stereotype},occupation number {k},an\n")
    variants = max(1, items // (BENCH_OCCUPATIONS * BENCH_TARGETS))
    targets = [f"x{t:02d}" for t in range(BENCH_TARGETS)]
    suite = {
        "name": "bench-otsc", "version": 1, "src_lang": "en", "targets": targets,
        "template": "I've known {pronoun} for {span}, my friend works as {article} {occupation}.",
        "occupations": {"lexicon": str(lexicon), "slots": {"occupation": "en", "article": "en_article"}},
        "variants": [{"name": f"v{k:03d}", "gold": "female" if k % 2 else "male",
                      "fill": {"pronoun": "her" if k % 2 else "him", "span": f"{k + 1} years"}} for k in range(variants)],
        "subset": "{target}/{variant}", "scorer": "otsc",
        "detectors": {t: "otsc-paper" for t in targets},
    }
    suite_path = tmp / f"bench-otsc-{items}.yaml"
    suite_path.write_text(yaml.safe_dump(suite), encoding="utf-8")
    config = {
        "name": f"bench-{items}", "suites": [str(suite_path)],
        "systems": {"copy": {"backend": "identity", "version": "bench"}},
        # a shard per send task: an instant backend has nothing paid to lose in a crash (the default of
        # 1000 texts per task bounds that loss for paid APIs, at ~14 ms of worker time per task here)
        "sweep": {"shard_size": 20_000, "in_flight": 2, "texts_per_task": 20_000},
        "cache": {"path": str(tmp / f"store-{items}")},
        "metrics": {"bootstrap": 200},
    }
    path = tmp / f"bench-{items}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


class PeakAnonRss:
    """Samples this process's anonymous RSS (its own heap, not the Ray object store's shared memory,
    which the driver maps and which ru_maxrss would count) and keeps the peak."""

    def __init__(self, every: float = 0.02):
        import threading

        self.peak_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(every,), daemon=True)

    def _sample(self) -> None:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("RssAnon:"):
                    self.peak_kb = max(self.peak_kb, int(line.split()[1]))

    def _run(self, every: float) -> None:
        while not self._stop.wait(every):
            self._sample()

    def __enter__(self):
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._sample()


def sweep_child(config: str, out: str) -> None:
    """Runs in a child process: expansion + sweep + scoring of a template suite, Ray started before
    the clock; prints items, seconds and the driver's peak anonymous RSS."""
    import ray

    from biaseval.pipeline import sweep, write_report
    from biaseval.run.cluster import start_local_ray

    start_local_ray(os.cpu_count(), logging_level="ERROR")  # as a sweep starts its own: nothing beyond loopback
    with PeakAnonRss() as rss:
        start = time.perf_counter()
        summary = sweep(config, out, stream=open(os.devnull, "w"), report=False)
        seconds = time.perf_counter() - start
    actor_s, imports_s = actor_start()
    ray.shutdown()
    start, cpu = time.perf_counter(), time.process_time()
    write_report(summary.run, summary.metrics)  # report.md + report.html: a cost per run, not per item
    report_s, report_cpu = time.perf_counter() - start, time.process_time() - cpu
    rows = pl.scan_parquet(Path(out) / "labels.parquet").select(pl.len()).collect().item()
    print(json.dumps({"rows": rows, "seconds": seconds, "peak_mb": rss.peak_kb / 1024, "report_s": report_s,
                      "report_cpu": report_cpu, "metrics": summary.metrics.height, "actor_s": actor_s,
                      "imports_s": imports_s}))


def actor_start() -> tuple[float, float]:
    """What every sweep pays before its first task, measured apart, after the sweep: a fresh Ray actor
    started and answering (Ray's own cost), and the same with the worker's imports (biaseval.run.worker,
    polars, pyarrow, which pulls in pandas) as the sweep's ShardWorker has them."""
    import ray

    class Bare:
        def ready(self) -> bool:
            return True

    class Importing(Bare):
        def __init__(self):
            import biaseval.run.worker  # noqa: F401

    times = []
    for cls in (Bare, Importing):
        start = time.perf_counter()
        actor = ray.remote(num_cpus=1)(cls).remote()
        ray.get(actor.ready.remote())
        times.append(time.perf_counter() - start)
        ray.kill(actor)
    return times[0], times[1]


def bench_sweep(sizes: list[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        results = []
        for items in sizes:
            config = _expansion_config(tmp_path, items)
            out = subprocess.run(
                [sys.executable, "-m", "benchmarks", "--sweep-child", str(config), str(tmp_path / f"run-{items}")],
                capture_output=True, text=True, check=True, cwd=REPO,
            )
            results.append(json.loads(out.stdout.strip().splitlines()[-1]))
        for r in results:
            rate = r["rows"] / r["seconds"]
            print(f"expansion + sweep + scoring (OTSC-shaped template, identity system, Ray started beforehand): "
                  f"{r['rows']:,} items in {r['seconds']:.1f} s = {rate:,.0f} items/s, {1e6 / rate:.1f} µs per item "
                  f"(target 50 k: ratio {rate / 50e3:.2f}); driver peak anonymous RSS {r['peak_mb']:.0f} MB")
            print(f"  of which fixed, whatever the size: a Ray actor's start (measured apart) {r['actor_s']:.2f} s, "
                  f"{r['imports_s']:.2f} s with the worker's imports; the sweep starts one per system")
            print(f"reports (md + html with charts) after the {r['rows']:,}-item sweep ({r['metrics']:,} metric rows): "
                  f"{r['report_s']:.1f} s wall, {r['report_cpu']:.1f} s CPU (target 3 s: ratio {3 / r['report_s']:.2f} "
                  f"wall, {3 / r['report_cpu']:.2f} CPU)")
        if len(results) > 1:
            growth = results[-1]["peak_mb"] / results[0]["peak_mb"]
            print(f"expansion + sweep + scoring: driver peak anonymous RSS grows {growth:.2f}x from "
                  f"{results[0]['rows']:,} to {results[-1]['rows']:,} items (target 1.1x: ratio {1.1 / growth:.2f})")


def bench_live(chars_per_min: float = 1_200_000, latency_s: float = 0.05) -> None:
    """A cloud backend (Google, REST) against a fake server that enforces a character quota and adds
    latency: achieved throughput against the quota bound, rows lost, and what a rerun sends."""
    import ray

    sys.path.insert(0, str(REPO / "tests"))
    from fakes.google_server import FakeGoogleTranslate

    from biaseval.pipeline import sweep

    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, logging_level="ERROR")
    try:
        with tempfile.TemporaryDirectory() as tmp, \
                FakeGoogleTranslate(chars_per_min=chars_per_min, burst_s=2.0, latency_s=latency_s) as fake:
            tmp_path = Path(tmp)
            config = {
                "name": "bench-live", "suites": ["otsc-hi", "winomt-hi"],
                "systems": {"google": {
                    "backend": "google", "version": "bench",
                    "options": {"project": "p", "transport": "rest", "credentials": "anonymous",
                                "endpoint": fake.endpoint("rest")},
                    "concurrency": 4, "limits": {"chars_per_min": chars_per_min},
                    "retry": {"backoff_s": 0.2}}},
                "sweep": {"texts_per_task": 400, "in_flight": 2},
                "cache": {"path": str(tmp_path / "store")},
                "metrics": {"bootstrap": 10},
            }
            path = tmp_path / "live.yaml"
            path.write_text(yaml.safe_dump(config), encoding="utf-8")
            devnull = open(os.devnull, "w")
            sweep(path, tmp_path / "a", stream=devnull)
            stats = fake.stats()
            ok = sorted((r for r in fake.requests if r.status == "OK"), key=lambda r: r.done)
            rows = pl.read_parquet(sorted((tmp_path / "a" / "translations").rglob("*.parquet")))
            lost = rows.height - rows["translation"].drop_nulls().len()
            sent = fake.count
            again = sweep(path, tmp_path / "b", stream=devnull)
            resent = fake.count - sent
    finally:
        ray.shutdown()
    # Sustained throughput between the first and the last accepted request, against the quota's rate.
    rate = chars_per_min / 60
    span = ok[-1].done - ok[0].done
    achieved = (stats["codepoints_ok"] - ok[0].codepoints) / span if span > 0 else float("nan")
    print(f"live API under a quota ({chars_per_min:,.0f} chars/min, {latency_s * 1000:.0f} ms latency): "
          f"{stats['codepoints_ok']:,.0f} characters in {int(stats['requests'])} requests "
          f"({int(stats.get('RESOURCE_EXHAUSTED', 0))} throttled) over {span:.1f} s = {achieved:,.0f} chars/s "
          f"against a quota of {rate:,.0f}: ratio {achieved / rate:.2f} (target 0.9); rows lost: {lost} of {rows.height}")
    print(f"live API: identical rerun sent {resent} requests (target 0); {again.sweep.sent} texts")


WINOMT = REPO / "conf" / "winomt-en.yaml"


def bench_winomt() -> None:
    """WinoMT scoring: the recorded outputs of conf/winomt-en.yaml (4 commercial systems and a research
    one, 10 target languages) labelled by entity alignment + morphology, then scored with intervals."""
    from biaseval.config import load_config
    from biaseval.metrics.labelling import label_corpus
    from biaseval.metrics.winomt import winomt
    from biaseval.run.plan import build_translator, prepare
    from biaseval.run.rows import translation_table

    config = load_config(WINOMT)
    prepared = prepare(config, WINOMT.parent)
    data = prepared.suites["winomt-en"]
    ranges = data.target_ranges()
    parts = []
    for system in config.systems:
        for tgt in config.targets_of(system, "winomt-en"):
            items = data.slice(*ranges[tgt])
            out, errors = build_translator(system, config.systems[system], WINOMT.parent).translate_items_with_errors(items)
            parts.append(pl.from_arrow(translation_table(items, out, system, "bench", "bench", errors=errors)))
    rows = pl.concat(parts)
    with tempfile.TemporaryDirectory() as tmp:
        items_path = Path(tmp) / "items.parquet"
        data.table.write_parquet(items_path)
        # cold: no trained alignment model kept (a fresh cache); warm: the same pairs scored again
        saved = os.environ.get("BIASEVAL_CACHE_DIR")
        os.environ["BIASEVAL_CACHE_DIR"] = str(Path(tmp) / "cache")
        child_cpu = {}
        for kind in ("cold", "warm"):
            start, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
            labelled = label_corpus(rows, "winomt-en", config, items_path)
            labelling = time.perf_counter() - start
            metrics = winomt(labelled, basis="acc", by_target=True, n_boot=config.metrics.bootstrap)
            seconds = time.perf_counter() - start
            cpu, children = time.process_time() - cpu, _children_cpu() - children
            child_cpu[kind] = children
            print(f"WinoMT scoring ({kind}): {rows.height:,} rows ({rows['system'].n_unique()} systems, "
                  f"{rows['tgt_lang'].n_unique()} languages): {seconds:.1f} s ({labelling:.1f} s aligning and reading "
                  f"genders, the rest metrics with {config.metrics.bootstrap} bootstrap replicates; {metrics.height} "
                  f"metric rows); CPU {cpu:.1f} s here + {children:.1f} s in child processes (the labelling workers "
                  f"and, under them, aligner training, lt-proc, hspell) (target 10 s: ratio {10 / seconds:.2f})")
        # cold and warm runs do the same work but the training: the difference is the aligner's own
        # cost (systran-align's C++ EM, one thread per model for repeatable links)
        print(f"WinoMT aligner training alone (cold - warm CPU in child processes): "
              f"{child_cpu['cold'] - child_cpu['warm']:.1f} s CPU for {rows['tgt_lang'].n_unique()} languages")
        if saved is None:
            os.environ.pop("BIASEVAL_CACHE_DIR")
        else:
            os.environ["BIASEVAL_CACHE_DIR"] = saved


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


EMBEDDING_WORDS = 250_000


def bench_embedding_memory() -> None:
    """A fastText .bin with 250,000 words, trained here on synthetic text; the study's reader asked for
    2,000 words (half unseen) in a fresh process, against fastText's own load_model: peak RSS."""
    with tempfile.TemporaryDirectory() as tmp:
        corpus, model = Path(tmp) / "corpus.txt", Path(tmp) / "model.bin"
        rng = random.Random(0)
        with open(corpus, "w", encoding="utf-8") as fh:
            for start in range(0, EMBEDDING_WORDS, 10):  # every word twice, in sentences of ten
                fh.write(" ".join(f"w{k}" for k in range(start, start + 10)) + "\n")
                fh.write(" ".join(f"w{rng.randrange(EMBEDDING_WORDS)}" for _ in range(5)) + " "
                         + " ".join(f"w{k}" for k in range(start, start + 10)) + "\n")
        train = ("import sys, fasttext; fasttext.train_unsupervised(sys.argv[1], model='skipgram', dim=50, epoch=1, "
                 "minCount=1, thread=2, verbose=0).save_model(sys.argv[2])")
        subprocess.run([sys.executable, "-c", train, str(corpus), str(model)], check=True)
        words = [f"w{k}" for k in range(0, EMBEDDING_WORDS, EMBEDDING_WORDS // 1000)] + [f"x{k}" for k in range(1000)]
        (Path(tmp) / "words.txt").write_text("\n".join(words), encoding="utf-8")
        size_mb = model.stat().st_size / 2**20
        # VmHWM, not ru_maxrss: a child's ru_maxrss starts from its parent's RSS at the fork
        measure = ("import sys, time\nfrom pathlib import Path\nimport numpy\n"
                   "def peak():\n    return next(int(line.split()[1]) for line in open('/proc/self/status') "
                   "if line.startswith('VmHWM:'))\n"
                   "words = Path(sys.argv[2]).read_text().split()\n"
                   "from biaseval.metrics.word_vectors import load_vectors\n"
                   "if sys.argv[3] == 'fasttext':\n    import fasttext\n"
                   "before = peak()\nstart = time.perf_counter()\n"
                   "if sys.argv[3] == 'reader':\n    v = load_vectors(sys.argv[1], words); n = int(v.found.sum())\n"
                   "else:\n    m = fasttext.load_model(sys.argv[1]); vocab = set(m.words)\n"
                   "    n = sum(w in vocab for w in words); [m.get_word_vector(w) for w in words]\n"
                   "print(before, peak(), time.perf_counter() - start, n)")
        out = {}
        for how in ("reader", "fasttext"):
            done = subprocess.run([sys.executable, "-c", measure, str(model), str(Path(tmp) / "words.txt"), how],
                                  check=True, capture_output=True, text=True, cwd=REPO)
            before, peak, seconds, found = done.stdout.split()
            out[how] = (max(int(peak) - int(before), 1024) / 1024, int(peak) / 1024, float(seconds), int(found))
    reader, whole = out["reader"], out["fasttext"]
    print(f"embedding study, .bin model of {EMBEDDING_WORDS:,} words ({size_mb:.0f} MB): {len(words):,} words "
          f"({reader[3]:,} in the vocabulary) read in {reader[2]:.1f} s; peak RSS grew by at most {reader[0]:.0f} MB "
          f"(process peak {reader[1]:.0f} MB, imports included) = {reader[0] / size_mb:.3f} of the model's size; "
          f"fastText's load_model: +{whole[0]:.0f} MB in {whole[2]:.1f} s (target: at most a tenth of the model: "
          f"ratio {size_mb / 10 / reader[0]:.1f})")


def bench_make_sweep() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "biaseval.cli", "sweep", "--config", str(PAPER), "--out", str(Path(tmp) / "run")],
                       check=True, capture_output=True, cwd=REPO)
        seconds = time.perf_counter() - start
    print(f"paper reproduction (biaseval sweep conf/paper.yaml, Ray start included): {seconds:.1f} s "
          f"(target 30 s: ratio {30 / seconds:.2f})")


def bench_trend(runs: int = 520, series: int = 120) -> None:
    """A decade of weekly monitoring runs (3 systems × ``series`` metric rows each), appended part by
    part with compaction, then `biaseval trend` over all of it."""
    from datetime import UTC, datetime, timedelta

    from click.testing import CliRunner

    from biaseval.cli import main as cli
    from biaseval.config import load_config
    from biaseval.monitor.history import append_history, store_dirs
    from biaseval.monitor.verdict import SystemDrift

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "monitor.yaml"
        path.write_text(yaml.safe_dump({"name": "bench", "suites": ["winomt-hi"], "systems": {"s": {"backend": "identity"}},
                                        "monitor": {"store": str(Path(tmp) / "store")}}), encoding="utf-8")
        _, store = store_dirs(load_config(path), path.parent)
        systems = [SystemDrift(s, "ok") for s in ("google", "azure", "deepl")]
        start = time.perf_counter()
        for k in range(runs):
            metrics = pl.DataFrame({"system": [s.system for s in systems for _ in range(series)],
                                    "suite": "winomt-hi", "subset": [f"set{i}" for _ in systems for i in range(series)],
                                    "metric": "acc", "value": 0.5, "ci_low": 0.4, "ci_high": 0.6, "n": 704})
            append_history(store, f"bench-{k:04d}", datetime(2016, 1, 4, tzinfo=UTC) + timedelta(weeks=k), metrics, systems)
        appended = time.perf_counter() - start
        start = time.perf_counter()
        result = CliRunner().invoke(cli, ["trend", "--config", str(path), "--csv"])
        seconds = time.perf_counter() - start
    rows = result.output.count("\n") - 1
    print(f"monitor history: {runs} runs appended in {appended:.1f} s ({1000 * appended / runs:.0f} ms a run, compaction "
          f"included); trend over {rows:,} rows: {seconds:.2f} s (target 5 s: ratio {5 / seconds:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sweep-child", nargs=2, metavar=("CONFIG", "OUT"))
    parser.add_argument("--rows", type=int, default=2_000_000, help="scoring benchmark size")
    parser.add_argument("--drift-runs", type=int, default=1000, help="simulated comparisons per drift scenario")
    parser.add_argument("--only", choices=["scoring", "sweep", "live", "winomt", "embedding", "make-sweep", "trend",
                                           "drift"],
                        help="run one benchmark")
    args = parser.parse_args()
    if args.sweep_child:
        sweep_child(*args.sweep_child)
        return
    if args.only:
        {"scoring": lambda: bench_scoring(args.rows), "sweep": lambda: bench_sweep([100_000, 1_000_000]),
         "live": bench_live, "winomt": bench_winomt, "embedding": bench_embedding_memory,
         "make-sweep": bench_make_sweep, "trend": bench_trend, "drift": lambda: bench_drift(args.drift_runs)}[args.only]()
        return
    bench_scoring(args.rows)
    bench_sweep([100_000, 1_000_000])
    bench_live()
    bench_winomt()
    bench_embedding_memory()
    bench_make_sweep()
    bench_trend()
    bench_drift(args.drift_runs)


if __name__ == "__main__":
    main()
