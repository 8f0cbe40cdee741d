"""Where is the grid's next factor? The model's unit costs on this machine's devices (not a test).

``grid_speed.py`` measures, on the CPU it runs on, the tokens a grid must forward (its bound (d))
and the sequential decoding steps (b) spends (the mini grid: 14,902 unique tokens and 1,119
decoding steps, which are half of (b)). This script measures the two unit costs those counts are
multiplied by -- forward throughput (tokens/s of a large batched forward) and the seconds of one
decoding step against a key/value cache -- on every device torch sees here, for the embedded
model's *architecture* (its config.json; weights drawn at random, since time does not depend on
their values and the 540 MB checkpoint need not travel). With ``--unique-tokens`` and ``--steps``
it prints what (d) and the decoding would cost on each device, beside the CPU:

    .venv/bin/python benchmarks/device_bound.py --config ~/.cache/safetyrepro/models/SmolLM2-135M-Instruct/config.json \\
        --unique-tokens 14902 --steps 1119

It needs only torch and transformers, so it runs on a lent GPU machine as it is.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import warnings

import torch
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM, StaticCache


def timed(device: str, call, repeats: int) -> float:  # noqa: ANN001 - a script
    """Best of ``repeats`` wall-clock seconds of ``call()`` (the device synchronised around it)."""
    best = float("inf")
    for _ in range(repeats):
        if device == "cuda":
            torch.cuda.synchronize()
        started = time.perf_counter()
        call()
        if device == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - started)
    return best


def throughput(model, device: str, batch: int, length: int, repeats: int) -> float:  # noqa: ANN001
    """Tokens per second of one batched forward of ``batch`` x ``length`` tokens (logits of the last)."""
    ids = torch.randint(0, model.config.vocab_size, (batch, length), device=device)
    model(input_ids=ids[:1, :16], logits_to_keep=1)  # warm-up (kernels, allocator)
    return batch * length / timed(device, lambda: model(input_ids=ids, logits_to_keep=1), repeats)


def decode_step(model, device: str, batch: int, context: int, steps: int) -> float:  # noqa: ANN001
    """Seconds per sequential decoding step of ``batch`` rows after a ``context``-token prefill:
    each step forwards one token per row against the growing key/value cache, as generation does."""
    ids = torch.randint(0, model.config.vocab_size, (batch, context), device=device)
    step_ids = torch.randint(0, model.config.vocab_size, (batch, 1), device=device)

    def run() -> None:
        cache = DynamicCache()
        model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
        for _ in range(steps):
            model(input_ids=step_ids, past_key_values=cache, use_cache=True, logits_to_keep=1)

    prefill = timed(device, lambda: model(input_ids=ids, logits_to_keep=1), 2)
    return max(timed(device, run, 2) - prefill, 0.0) / steps


def graph_step(model, batch: int, context: int, steps: int) -> float:  # noqa: ANN001
    """Seconds per decoding step replayed from one captured CUDA graph (a static key/value cache;
    the position advanced in place), as graph-capturing servers decode: no Python, no launches."""
    cache = StaticCache(config=model.config, max_cache_len=context + steps + 8)
    ids = torch.randint(0, model.config.vocab_size, (batch, context), device="cuda")
    step_ids = torch.randint(0, model.config.vocab_size, (batch, 1), device="cuda")
    model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1,
          cache_position=torch.arange(context, device="cuda"))
    position = torch.tensor([context], device="cuda")
    # Some transformers releases (5.17) place a static layer's writes by a counter of their own,
    # advanced by every call (the warm-up too), not by cache_position: rewound before each run
    # (read after the prefill, which moves the counter to the device).
    counters = [layer.cumulative_length for layer in cache.layers if hasattr(layer, "cumulative_length")]

    def step() -> None:
        model(input_ids=step_ids, past_key_values=cache, use_cache=True, cache_position=position, logits_to_keep=1)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the capture stream, as torch.cuda.graph asks
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()

    def run() -> None:
        for counter in counters:
            counter.fill_(context)
        for i in range(steps):
            position.fill_(context + i)
            graph.replay()

    return timed("cuda", run, 3) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, required=True, help="the model's config.json")
    parser.add_argument("--unique-tokens", type=int, default=0, help="a grid's unique tokens, from grid_speed.py")
    parser.add_argument("--steps", type=int, default=0, help="a grid's sequential decoding steps, from grid_speed.py")
    parser.add_argument("--context", type=int, default=256, help="prefill length before decoding")
    parser.add_argument("--decode-steps", type=int, default=32, help="decoding steps timed per measurement")
    parser.add_argument("--devices", default="cpu,cuda", help="which of cpu, cuda to measure (default both)")
    args = parser.parse_args()
    # transformers >= 5.2x renames past_key_values; the old name keeps this script running on older ones.
    warnings.filterwarnings("ignore", message=".*past_key_values.*", category=FutureWarning)

    config = LlamaConfig(**{k: v for k, v in json.loads(args.config.read_text()).items()
                            if not k.startswith("_") and k != "transformers_version"})
    torch.manual_seed(0)
    wanted = set(args.devices.split(","))
    devices = [("cpu", torch.float32)] if "cpu" in wanted else []
    if "cuda" in wanted and torch.cuda.is_available():
        devices += [("cuda", torch.float32), ("cuda", torch.bfloat16)]
        print(f"cuda: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print(f"cpu: {torch.get_num_threads()} threads, torch {torch.__version__}")
    rows = []
    for device, dtype in devices:
        model = LlamaForCausalLM(config).to(device=device, dtype=dtype).eval()
        batches = [1, 8, 32, 128] if device == "cuda" else [1, 8, 32]
        with torch.inference_mode():
            rate = throughput(model, device, 8, 512, 3)
            big = throughput(model, device, 64, 512, 3) if device == "cuda" else rate
            steps = {b: decode_step(model, device, b, args.context, args.decode_steps) for b in batches}
            graphs = {}
            if device == "cuda":
                try:
                    graphs = {b: graph_step(model, b, args.context, args.decode_steps) for b in batches}
                except Exception as error:  # noqa: BLE001 - a capture this transformers cannot do is a finding
                    print(f"CUDA graph capture failed: {type(error).__name__}: {str(error)[:300]}")
        name = f"{device} {str(dtype).removeprefix('torch.')}"
        rows.append((name, rate, big, steps))
        if graphs:
            rows.append((name + " graph", rate, big, graphs))
        print(f"{name:14s} forward {rate:12,.0f} tok/s at 8x512, {big:12,.0f} at 64x512;  decoding step "
              + ", ".join(f"batch {b}: {s * 1000:.2f} ms" for b, s in steps.items()))
        if graphs:
            print(f"{'':14s} decoding step replayed from a CUDA graph: "
                  + ", ".join(f"batch {b}: {s * 1000:.3f} ms" for b, s in graphs.items()))
        del model
        if device == "cuda":
            torch.cuda.empty_cache()
    if args.unique_tokens or args.steps:
        print(f"projection for {args.unique_tokens:,} unique tokens and {args.steps:,} decoding steps (batch <= 8):")
        for name, rate, big, steps in rows:
            d, decoding = args.unique_tokens / big, args.steps * steps[8]
            print(f"  {name:14s} (d) {d:8.2f} s   decoding {decoding:8.2f} s   together {d + decoding:8.2f} s")


if __name__ == "__main__":
    main()
