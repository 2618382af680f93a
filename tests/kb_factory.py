"""Knowledge bases for the builder's tests and bench, written through logkit.store.

``realistic(root)`` writes three small sessions shaped like the seed accounts (GLM-5 / Qwen3.5 MoE
bring-ups on SM120 next to SM100 and SM90; backends that crash, produce garbage, run out of
memory or work; benchmarks at several concurrencies; hypotheses, verdicts, todo snapshots,
decisions with supersession and cross-session evidence). With ``planted=True`` every free-text
field also carries an injection attempt, which the site must show as text.
``synthetic(root, sessions, attempts)`` writes a large generated knowledge base for bench/.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from logkit.events import (
    Attempt, BaseEvent, Decision, DecisionOption, Environment, EvidenceLine, Gpu, Hypothesis, LaunchConfig, Metric,
    Milestone, Note, Outcome, Provenance, Smoke, Todo, TodoItem, Verdict,
)
from logkit.store import Store

PLANT = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"> [click](javascript:alert(1)) **bold** | cell | {: #evil }'

GPUS = {
    "SM120": ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0", 97887, "580.82.07"),
    "SM100": ("NVIDIA B200", "10.0", 183359, "575.57.08"),
    "SM90": ("NVIDIA H200", "9.0", 143771, "570.133.20"),
}
MODELS = ["zai-org/GLM-5-NVFP4", "nvidia/Qwen3.5-397B-A17B-NVFP4", "deepseek-ai/DeepSeek-V3.2"]
MOE = ["flashinfer_trtllm", "flashinfer_cutlass", "flashinfer_cutedsl", "triton", "cutlass"]
ATTN = ["flashinfer", "trtllm_mla", "fa3", "triton", "flashmla"]
# (backend value, arch) -> (status, signature, label, log line)
FAILS = {
    ("flashinfer_trtllm", "SM120"): ("arch_mismatch", "cuda-no-kernel-image", "no kernel image for SM120",
                                     "RuntimeError: CUDA error: no kernel image is available for execution on the device"),
    ("flashinfer_cutedsl", "SM120"): ("garbage", "garbage-output", "server ready but replies are garbage",
                                      "smoke reply: ',,,,,,,,,,,,,,,,'"),
    ("fa3", "SM120"): ("missing_kernel", "fa3-sm90-only", "FlashAttention-3 kernels are built for SM90 only",
                       "AssertionError: FA3 is only supported on sm90 (got sm120)"),
    ("fa3", "SM100"): ("missing_kernel", "fa3-sm90-only", "FlashAttention-3 kernels are built for SM90 only",
                       "AssertionError: FA3 is only supported on sm90 (got sm100)"),
    ("trtllm_mla", "SM90"): ("jit_error", "trtllm-mla-jit", "TRT-LLM MLA kernels need Blackwell",
                             "RuntimeError: trtllm_mla requires sm100 or newer"),
}
VERSIONS = [("0.5.21", "0.5.2", "2.9.1"), ("0.5.22", "0.5.3", "2.9.1"), ("0.5.23", "0.5.3", "2.9.1")]


def _env(arch: str, count: int, versions: tuple[str, str, str]) -> Environment:
    name, cap, mem, driver = GPUS[arch]
    sglang, flashinfer, torch = versions
    return Environment(
        host="gpu-node-07", os="Linux 6.8", python="3.12.3",
        gpus=[Gpu(index=i, name=name, driver=driver, memory_mib=mem, compute_cap=cap) for i in range(count)],
        packages={"sglang": sglang, "flashinfer-python": flashinfer, "torch": torch, "sgl-kernel": "0.3.9"},
        torch_cuda="12.9",
    )


def _launch_argv(model: str, tp: int, moe: str, attn: str, extra: list[str]) -> list[str]:
    return ["python", "-m", "sglang.launch_server", "--model-path", model, "--tp", str(tp),
            "--moe-runner-backend", moe, "--attention-backend", attn, "--port", "30000", *extra]


class Writer:
    """Builds the events of one session with a moving clock and short ids."""

    def __init__(self, session: str, start: datetime, prov: Provenance | None = None) -> None:
        self.session, self.t, self.prov = session, start, prov
        self.events: list[BaseEvent] = []
        self.n_attempt = self.n_hyp = 0

    def tick(self, minutes: float = 3) -> datetime:
        self.t += timedelta(minutes=minutes)
        return self.t

    def add(self, event: BaseEvent) -> BaseEvent:
        self.events.append(event)
        return event

    def hypothesis(self, text: str, priority: str = "high") -> str:
        self.n_hyp += 1
        hid = f"H{self.n_hyp}"
        self.add(Hypothesis(session=self.session, ts=self.tick(1), short_id=hid, text=text, priority=priority,
                            provenance=self.prov))
        return hid

    def launch(self, model: str, arch: str, gpus: int, moe: str, attn: str, versions: tuple[str, str, str],
               extra: list[str] | None = None, fail: tuple[str, str, str, str] | None = None,
               throughput: float | None = None) -> str:
        self.n_attempt += 1
        aid = f"A{self.n_attempt}"
        argv = _launch_argv(model, gpus, moe, attn, extra or [])
        started = self.tick()
        fingerprint = {"model_path": model, "tp_size": gpus, "moe_runner_backend": moe, "attention_backend": attn,
                       "quantization": "modelopt_fp4" if "FP4" in model else None,
                       "fp4_gemm_runner_backend": "flashinfer_cutlass" if "FP4" in model else None}
        self.add(Attempt(
            session=self.session, ts=started, started=started, short_id=aid, role="launch", argv=argv,
            environment=_env(arch, gpus, versions), provenance=self.prov,
            launch=LaunchConfig(parser="sglang", sglang_version=versions[0], unresolved=False,
                                fingerprint=fingerprint, non_default={"tp_size": gpus, "port": 30000}, port=30000),
        ))
        ended = self.tick(4)
        if fail is None:
            self.add(Outcome(session=self.session, ts=ended, ended=ended, attempt=aid, status="ready",
                             label="server ready", duration_s=240.0, provenance=self.prov,
                             timeline=[Milestone(stage="weights_loaded", seconds=150.0),
                                       Milestone(stage="cuda_graphs", seconds=60.0), Milestone(stage="ready", seconds=240.0)],
                             evidence=[EvidenceLine(line=1204, text="The server is fired up and ready to roll!")]))
            self.add(Smoke(session=self.session, ts=self.tick(1), attempt=aid, prompt="What is 2+2?", reply="4", ok=True))
            if throughput:
                self.bench(aid, throughput)
        else:
            status, signature, label, line = fail
            if status == "garbage":
                self.add(Outcome(session=self.session, ts=ended, ended=ended, attempt=aid, status="garbage",
                                 label=label, signature=signature, duration_s=250.0, provenance=self.prov,
                                 evidence=[EvidenceLine(line=1311, text=line)]))
            else:
                self.add(Outcome(session=self.session, ts=ended, ended=ended, attempt=aid, status=status, label=label,
                                 signature=signature, duration_s=95.0, exit_code=1, provenance=self.prov,
                                 evidence=[EvidenceLine(line=880, text="Traceback (most recent call last):"),
                                           EvidenceLine(line=902, text=line)]))
        return aid

    def bench(self, server: str, peak: float) -> None:
        self.n_attempt += 1
        aid = f"A{self.n_attempt}"
        started = self.tick()
        self.add(Attempt(session=self.session, ts=started, started=started, short_id=aid, role="bench",
                         argv=["python", "-m", "sglang.bench_serving", "--backend", "sglang", "--num-prompts", "320"],
                         provenance=self.prov))
        for conc in (1, 4, 16, 64):
            scale = conc / (conc + 8)
            for name, value, unit in (("output_throughput", peak * scale, "tok/s"),
                                      ("mean_ttft_ms", 180 + 9 * conc, "ms"), ("mean_itl_ms", 11 + 0.6 * conc, "ms")):
                self.add(Metric(session=self.session, ts=self.tick(0.5), name=name, value=round(value, 2), unit=unit,
                                attempt=aid, server_attempt=server, labels={"max_concurrency": conc},
                                provenance=self.prov))
        self.add(Outcome(session=self.session, ts=self.tick(1), attempt=aid, status="exit_ok", exit_code=0,
                         duration_s=300.0, provenance=self.prov))


def _write(store: Store, sid: str, title: str, when: datetime, w: Writer, goal: str | None = None,
           prov: Provenance | None = None) -> None:
    handle = store.create(title, session_id=sid, when=when, goal=goal, tags=["bring-up"], make_current=False,
                          provenance=prov)
    with handle.transaction() as txn:
        for event in w.events:
            txn.append(event)


def realistic(root: Path, *, planted: bool = False) -> Store:
    """Three sessions shaped like the seeds; ``planted`` puts injections in every text field."""
    store = Store(root)
    p = f" {PLANT}" if planted else ""
    day = datetime(2026, 11, 14, 9, 0, tzinfo=UTC)

    s1 = "2026-11-14-glm5-sm120"
    w = Writer(s1, day)
    h1 = w.hypothesis("flashinfer_trtllm MoE runs on SM120" + p)
    h2 = w.hypothesis("flashinfer_cutlass MoE is the fastest working MoE runner on SM120")
    w.add(Todo(session=s1, ts=w.tick(1), items=[
        TodoItem(content="Test flashinfer_trtllm MoE backend" + p, status="in_progress", priority="high", hypothesis=h1),
        TodoItem(content="Baseline benchmarks", status="pending", priority="high")]))
    a1 = w.launch(MODELS[0], "SM120", 8, "flashinfer_trtllm", "flashinfer", VERSIONS[1], fail=FAILS[("flashinfer_trtllm", "SM120")])
    w.add(Verdict(session=s1, ts=w.tick(1), hypothesis=h1, verdict="refuted", evidence=[a1],
                  because="trtllm-gen MoE kernels ship for SM100 only; retry when flashinfer ships SM120 cubins" + p))
    a3 = w.launch(MODELS[0], "SM120", 8, "flashinfer_cutedsl", "flashinfer", VERSIONS[1], fail=FAILS[("flashinfer_cutedsl", "SM120")])
    a4 = w.launch(MODELS[0], "SM120", 8, "flashinfer_cutlass", "flashinfer", VERSIONS[1], throughput=2250.0,
                  extra=["--mem-fraction-static", "0.92", "--served-model-name", "glm5" + ("<script>x</script>" if planted else "")])
    a_slow = w.launch(MODELS[0], "SM120", 8, "triton", "flashinfer", VERSIONS[1], throughput=700.0)
    w.add(Verdict(session=s1, ts=w.tick(1), hypothesis=h2, verdict="confirmed", evidence=[a4, a_slow]))
    w.add(Todo(session=s1, ts=w.tick(1), items=[
        TodoItem(content="Test flashinfer_trtllm MoE backend" + p, status="completed", priority="high", hypothesis=h1),
        TodoItem(content="Baseline benchmarks", status="completed", priority="high"),
        TodoItem(content="Try EP8", status="pending", priority="medium")]))
    w.add(Decision(session=s1, ts=w.tick(1), decision_id="DR-0001", title="Use flashinfer_cutlass MoE on SM120" + p,
                   context="GLM-5 NVFP4 on 8x RTX PRO 6000 needs a MoE runner that has SM120 kernels." + p,
                   decision="Launch with --moe-runner-backend flashinfer_cutlass.",
                   options=[DecisionOption(name="flashinfer_cutlass", chosen=True, attempts=[a4]),
                            DecisionOption(name="flashinfer_trtllm", why_not="no SM120 kernels" + p, hypotheses=[h1], attempts=[a1]),
                            DecisionOption(name="flashinfer_cutedsl", why_not="garbage output", attempts=[a3]),
                            DecisionOption(name="triton", why_not="3x slower", attempts=[a_slow])],
                   evidence=[a1, a3, a4, "2026-01-01-nowhere/A9"], consequences="Re-check on each flashinfer release." + p,
                   tags=["moe", "sm120"]))
    w.add(Note(session=s1, ts=w.tick(1), text="CUDA graphs need --mem-fraction-static 0.92 here" + p, refs=[a4]))
    _write(store, s1, "GLM-5 NVFP4 on 8x RTX PRO 6000" + p, day, w, goal="a working server and baseline numbers" + p)

    s2 = "2026-11-20-qwen35-b200"
    day2 = day + timedelta(days=6)
    w = Writer(s2, day2)
    w.hypothesis("fa3 attention works on SM100")
    w.launch(MODELS[1], "SM100", 4, "flashinfer_trtllm", "fa3", VERSIONS[2], fail=FAILS[("fa3", "SM100")])
    w.launch(MODELS[1], "SM100", 4, "flashinfer_trtllm", "trtllm_mla", VERSIONS[2], throughput=5400.0)
    w.launch(MODELS[0], "SM120", 8, "flashinfer_cutlass", "flashinfer", VERSIONS[2], throughput=2400.0,
             extra=["--mem-fraction-static", "0.92", "--served-model-name", "glm5" + ("<script>x</script>" if planted else "")])
    w.add(Decision(session=s2, ts=w.tick(1), decision_id="DR-0002", title="Move GLM-5 on SM120 to SGLang 0.5.23",
                   status="accepted", context="0.5.23 is 7% faster with the same flags.",
                   decision="Pin sglang 0.5.23 with flashinfer_cutlass.", supersedes="DR-0001",
                   options=[DecisionOption(name="stay on 0.5.22", why_not="slower", attempts=["2026-11-14-glm5-sm120/A4"])],
                   evidence=["A3", "2026-11-14-glm5-sm120/A4"]))
    _write(store, s2, "Qwen3.5 NVFP4 on 4x B200", day2, w)

    s3 = "2026-11-25-dsv32-h200-reconstructed"
    day3 = day + timedelta(days=11)
    prov = Provenance(source="reconstructed", detail="seeds/004_d80e1e267c0932d4.txt" + p)
    w = Writer(s3, day3, prov)
    w.launch(MODELS[2], "SM90", 8, "triton", "trtllm_mla", VERSIONS[0], fail=FAILS[("trtllm_mla", "SM90")])
    w.launch(MODELS[2], "SM90", 8, "triton", "fa3", VERSIONS[0],
             fail=("oom", "cuda-oom-graph-capture", "CUDA out of memory during CUDA graph capture",
                   "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"))
    w.launch(MODELS[2], "SM90", 8, "triton", "fa3", VERSIONS[0], extra=["--cuda-graph-max-bs", "64"], throughput=3100.0)
    _write(store, s3, "DeepSeek-V3.2 on 8x H200 (from a written account)", day3, w, prov=prov)
    return store


def synthetic(root: Path, sessions: int = 200, attempts: int = 10_000, seed: int = 7) -> Store:
    """A large generated knowledge base: ``sessions`` sessions, about ``attempts`` attempts in all."""
    rng = random.Random(seed)
    store = Store(root)
    start = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
    per = max(1, attempts // sessions)
    dr = 0
    for s in range(sessions):
        sid = f"2026-synth-{s:04d}"
        when = start + timedelta(hours=9 * s)
        w = Writer(sid, when)
        model = rng.choice(MODELS)
        arch = rng.choice(list(GPUS))
        versions = rng.choice(VERSIONS)
        hyp = w.hypothesis(f"{rng.choice(MOE)} MoE is fastest for {model} on {arch}")
        launches: list[str] = []
        while w.n_attempt < per:
            moe, attn = rng.choice(MOE), rng.choice(ATTN)
            fail = FAILS.get((moe, arch)) or FAILS.get((attn, arch))
            if fail is None and rng.random() < 0.08:
                fail = ("oom", "cuda-oom-graph-capture", "CUDA out of memory during CUDA graph capture",
                        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
            extra = ["--mem-fraction-static", rng.choice(["0.85", "0.88", "0.92"])]
            bench = fail is None and rng.random() < 0.3
            launches.append(w.launch(model, arch, rng.choice([4, 8]), moe, attn, versions, extra=extra, fail=fail,
                                     throughput=rng.uniform(800, 6000) if bench else None))
            if rng.random() < 0.1:
                w.add(Todo(session=sid, ts=w.tick(1), items=[TodoItem(content=f"try {moe} + {attn}", status="completed"),
                                                            TodoItem(content="benchmark", status="pending")]))
        w.add(Verdict(session=sid, ts=w.tick(1), hypothesis=hyp, verdict=rng.choice(["refuted", "confirmed"]),
                      evidence=launches[:2]))
        for _ in range(2):
            dr += 1
            w.add(Decision(session=sid, ts=w.tick(1), decision_id=f"DR-{dr:04d}", title=f"Backend choice {dr} for {model}",
                           context="synthetic", decision="synthetic", evidence=launches[:3],
                           supersedes=f"DR-{dr - 2:04d}" if dr > 2 and rng.random() < 0.2 else None,
                           options=[DecisionOption(name=rng.choice(MOE), chosen=True, attempts=launches[-1:]),
                                    DecisionOption(name=rng.choice(MOE), why_not="slower", hypotheses=[hyp],
                                                   attempts=launches[:1])]))
        _write(store, sid, f"Synthetic bring-up {s} of {model} on {arch}", when, w)
    return store


def status_of(root: Path, events: list, *, last: int = 5) -> dict:
    """``logkit status`` of the session ``events`` (models, one session) make, written to a file
    under ``root``: the status is a query over the index, so it is asked of a real store."""
    import json

    from logkit.reasoning.status import session_status

    sid = events[0].session
    (root / sid).mkdir(parents=True, exist_ok=True)
    with open(root / sid / "events.jsonl", "w", encoding="utf-8") as fh:
        for e in events:
            fh.write(json.dumps(e.model_dump(mode="json", exclude_none=True), separators=(",", ":")) + "\n")
    return session_status(root, sid, last=last)[0]
