"""Each rule on small sources: what it reports (and exactly which code it underlines) and what it
leaves alone."""

from __future__ import annotations

import ast

from stepscope.rules.quickfix import real_fixes

from .helpers import apply_fix, check, found, src

TRAIN = """
import torch

def train(model, loader, optimizer, criterion):
    for x, y in loader:
        optimizer.zero_grad()
        out = model(x)
        loss = criterion(out, y)
        loss.backward()
        optimizer.step()
        {body}
"""


def in_step(body: str) -> str:
    return TRAIN.replace("{body}", body)


# ---- SS101 -------------------------------------------------------------------------------------
def test_ss101_item_in_step_loop_underlines_the_call():
    assert found(in_step("total += loss.item()"), "SS101") == [(10, "loss.item()")]


def test_ss101_each_sync_kind_in_the_step_loop():
    body = "\n        ".join([
        "a = out.cpu()",
        "b = out.detach().numpy()",
        "c = out.argmax(1).tolist()",
        "d = float(loss)",
        "torch.cuda.synchronize()",
        "print(loss)",
        "if loss < 0.1:\n            break",
        "print(f'loss {loss:.3f}')",
    ])
    got = [text for _, text in found(in_step(body), "SS101")]
    assert got == ["out.cpu()", "out.detach().numpy()", "out.argmax(1).tolist()", "float(loss)",
                   "torch.cuda.synchronize()", "print(loss)", "loss < 0.1",
                   "print(f'loss {loss:.3f}')"]


def test_ss101_one_report_per_chain():
    assert found(in_step("v = out.cpu().numpy()"), "SS101") == [(10, "out.cpu()")]


def test_ss101_not_after_the_loop_nor_outside_loops():
    text = """
        import torch
        loss = model(x).sum()
        print(loss.item())
        for x, y in loader:
            loss = model(x).sum()
            loss.backward()
            optimizer.step()
        print(loss.item(), float(loss))
    """
    assert found(text, "SS101") == []


def test_ss101_not_in_a_data_preparation_loop():
    text = """
        for path in files:
            arr = torch.load(path)
            stats.append(arr.mean().item())
    """
    assert found(text, "SS101") == []


def test_ss101_periodic_logging_is_deliberate():
    body = "if step % 100 == 0:\n            print(loss.item())"
    assert found(in_step(body), "SS101") == []


def test_ss101_epoch_level_sync_is_not_in_the_step():
    text = """
        for epoch in range(10):
            for x, y in loader:
                loss = model(x).sum()
                loss.backward()
                optimizer.step()
            print(epoch, loss.item())
    """
    assert found(text, "SS101") == []


def test_ss101_leaves_numpy_arrays_none_checks_and_timing_syncs_alone():
    body = "\n        ".join([
        "labels = y_np.tolist()",
        "if out is None:\n            continue",
        "n = int(batch_size)",
        "print('step done')",
    ])
    assert found(in_step(body), "SS101") == []
    timed = """
        import time, torch
        for x in loader:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = model(x)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
    """
    assert found(timed, "SS101") == []


def test_ss101_in_a_closure_the_step_runs_every_step():
    # LBFGS runs the closure (several times) in every optimizer step
    text = """
        import torch
        for i in range(steps):
            def closure():
                optimizer.zero_grad()
                loss = criterion(model(x), y)
                print('loss:', loss.item())
                loss.backward()
                return loss
            optimizer.step(closure)
    """
    assert found(text, "SS101") == [(6, "loss.item()")]


def test_ss101_not_in_a_function_the_step_only_defines_or_runs_rarely():
    text = """
        import torch
        for i in range(steps):
            def report():
                print(loss.item())
            def closure():
                loss = criterion(model(x), y)
                print(loss.item())
                return loss
            loss = optimizer.step(closure_without_print)
            if i % 100 == 0:
                report()
    """
    assert found(text, "SS101") == []


def test_ss101_moving_the_model_is_not_a_sync():
    assert found(in_step("model.cpu()"), "SS101") == []


# ---- SS102 -------------------------------------------------------------------------------------
def test_ss102_sync_after_every_op_in_a_profiled_region():
    text = """
        import torch
        from torch.profiler import profile
        with profile() as prof:
            for _ in range(5):
                a = model(x)
                torch.cuda.synchronize()
                b = head(a)
                torch.cuda.synchronize()
    """
    assert found(text, "SS102") == [(8, "torch.cuda.synchronize()")]


def test_ss102_sync_after_every_op_in_a_timed_interval():
    text = """
        import time, torch
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        a = model(x)
        torch.cuda.synchronize()
        b = head(a)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
    """
    assert found(text, "SS102") == [(7, "torch.cuda.synchronize()")]


def test_ss102_one_sync_before_each_clock_reading_is_correct():
    text = """
        import time, torch
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = model(x)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
    """
    assert found(text, "SS102") == []


# ---- SS201 / SS202 -----------------------------------------------------------------------------
def test_ss201_duration_around_cuda_work_without_sync():
    text = """
        import time, torch
        model = model.cuda()
        t0 = time.perf_counter()
        out = model(x)
        elapsed = time.perf_counter() - t0
    """
    assert found(text, "SS201") == [(5, "time.perf_counter() - t0")]


def test_ss201_not_with_a_sync_events_or_on_cpu_only_code():
    synced = """
        import time, torch
        model = model.cuda()
        t0 = time.perf_counter()
        out = model(x)
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - t0
    """
    assert found(synced, "SS201") == []
    item_read = """
        import time, torch
        x = x.cuda()
        t0 = time.perf_counter()
        loss = model(x)
        total = loss.item()
        elapsed = time.perf_counter() - t0
    """
    assert found(item_read, "SS201") == []
    cpu_only = """
        import time, torch
        t0 = time.perf_counter()
        out = model(x)
        elapsed = time.perf_counter() - t0
    """
    assert found(cpu_only, "SS201") == []


def test_ss202_time_time_duration_with_a_working_fix():
    text = """
        import time
        start = time.time()
        work()
        print(time.time() - start)
    """
    diags = [d for d in check(text) if d.code == "SS202"]
    assert [(d.line, d.col, d.end_col) for d in diags] == [(4, 6, 25)]
    fixed = apply_fix(src(text), diags[0].fixes[0])
    assert "time.time" not in fixed and fixed.count("time.perf_counter()") == 2
    assert not [d for d in check(fixed) if d.code == "SS202"]


def test_ss202_fix_converts_every_reading_a_loop_shares():
    text = """
        import time
        end = time.time()
        for x in loader:
            data_time = time.time() - end
            work(x)
            batch_time = time.time() - end
            end = time.time()
    """
    diags = [d for d in check(text) if d.code == "SS202"]
    assert len(diags) == 2
    fixed = apply_fix(src(text), diags[0].fixes[0])
    assert "time.time" not in fixed
    ast.parse(fixed)


def test_ss202_not_for_timestamps_or_monotonic_clocks():
    text = """
        import time
        stamp = time.time()
        log(stamp)
        t0 = time.perf_counter()
        work()
        dt = time.perf_counter() - t0
    """
    assert found(text, "SS202") == []


# ---- SS301 -------------------------------------------------------------------------------------
def test_ss301_labels_with_private_content():
    text = """
        from torch.profiler import record_function
        import torch
        with record_function("step jane.doe@example.com"):
            pass
        with record_function("/home/jane/data/batch"):
            pass
        with record_function(f"prompt={prompt}"):
            pass
        torch.cuda.nvtx.range_push("key sk-abcdefghijklmnopqrstuv")
        with record_function("load " + filename):
            pass
    """
    assert [t for _, t in found(text, "SS301")] == [
        '"step jane.doe@example.com"', '"/home/jane/data/batch"', 'f"prompt={prompt}"',
        '"key sk-abcdefghijklmnopqrstuv"', '"load " + filename']


def test_ss301_step_names_and_counters_are_fine():
    text = """
        from torch.profiler import record_function
        for i in range(3):
            with record_function(f"step_{i}"):
                pass
            with record_function("data_loading"):
                pass
            with record_function(f"layer_{layer_idx}_bs{batch_size}"):
                pass
    """
    assert found(text, "SS301") == []


# ---- SS401–SS407 -------------------------------------------------------------------------------
PROFILED = """
import torch
from torch.profiler import profile, schedule, ProfilerActivity, supported_activities
with profile({args}) as prof:
    for x in it:
        loss = model(x)
        prof.step()
"""


def profiled(args: str) -> str:
    return PROFILED.replace("{args}", args)


def test_ss401_underlines_the_keyword_and_fixes_it():
    text = profiled("schedule=schedule(wait=1, warmup=1, active=2), record_shapes=True, "
                    "with_stack=False")
    assert found(text, "SS401") == [(3, "record_shapes=True")]
    diag = next(d for d in check(text) if d.code == "SS401")
    assert "record_shapes=False" in apply_fix(src(text), diag.fixes[0])


def test_ss402_profile_around_loop_without_schedule():
    assert found(profiled(""), "SS402") == [(3, "with profile()")]
    assert found(profiled("schedule=schedule(wait=1, warmup=1, active=2)"), "SS402") == []
    no_loop = "from torch.profiler import profile\nwith profile() as p:\n    model(x)\n"
    assert found(no_loop, "SS402") == []


def test_ss402_ignores_other_libraries_profile():
    text = """
        from line_profiler import profile
        with profile():
            for x in xs:
                model(x)
    """
    assert found(text, "SS402") == []


def test_ss403_warmup_zero_with_fix():
    text = profiled("schedule=schedule(wait=1, warmup=0, active=2)")
    assert found(text, "SS403") == [(3, "warmup=0")]
    diag = next(d for d in check(text) if d.code == "SS403")
    assert "warmup=1" in apply_fix(src(text), diag.fixes[0])
    assert found(profiled("schedule=schedule(wait=1, warmup=2, active=2)"), "SS403") == []


def test_ss404_scheduled_profiler_never_stepped():
    text = """
        from torch.profiler import profile, schedule
        with profile(schedule=schedule(wait=1, warmup=1, active=2)) as prof:
            for x in it:
                model(x)
    """
    assert found(text, "SS404") == [(2, "with profile(schedule=schedule(wait=1, warmup=1, active=2))")]
    handed_over = text.replace("model(x)", "train_step(model, x, prof)")
    assert found(handed_over, "SS404") == []
    assert found(profiled("schedule=schedule(wait=1, warmup=1, active=2)"), "SS404") == []


def test_ss405_fixed_trace_path_and_its_fix():
    text = """
        prof.export_chrome_trace("trace.json")
    """
    assert found(text, "SS405") == [(1, '"trace.json"')]
    diag = next(d for d in check(text) if d.code == "SS405")
    fixed = apply_fix(src(text), diag.fixes[0])
    assert fixed.startswith("import os\nimport time\n")
    # unique per run, not per second: two runs started in the same second differ by process id
    assert "f\"trace-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.json\"" in fixed
    ast.parse(fixed)


def test_ss405_not_when_the_name_varies_or_is_checked():
    assert found('prof.export_chrome_trace(f"trace-{run_id}.json")\n', "SS405") == []
    assert found("prof.export_chrome_trace(args.trace)\n", "SS405") == []
    checked = """
        from pathlib import Path
        trace = Path("t.json")
        if trace.exists():
            raise FileExistsError(trace)
        prof.export_chrome_trace(str(trace))
    """
    assert found(checked, "SS405") == []


def test_ss406_cuda_without_support_check_and_cpu_only_on_cuda():
    unchecked = """
        import torch
        from torch.profiler import profile, ProfilerActivity
        device = "cuda" if torch.cuda.is_available() else "cpu"
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
            model(x)
    """
    assert [t for _, t in found(unchecked, "SS406")] == [
        "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]"]
    cpu_only_on_gpu = """
        from torch.profiler import profile, ProfilerActivity
        x = x.to("cuda")
        with profile(activities=[ProfilerActivity.CPU]):
            model(x)
    """
    assert len(found(cpu_only_on_gpu, "SS406")) == 1
    cpu_program = cpu_only_on_gpu.replace('x.to("cuda")', 'x.to("cpu")')
    assert found(cpu_program, "SS406") == []
    checked = unchecked + "assert ProfilerActivity.CUDA in supported_activities()\n"
    assert found(checked, "SS406") == []
    cuda_only = unchecked.replace('"cuda" if torch.cuda.is_available() else "cpu"', '"cuda"')
    assert found(cuda_only, "SS406") == []  # a CUDA-only program fails loudly before profiling


def test_ss407_summed_inclusive_times():
    text = """
        total = sum(e.cuda_time_total for e in prof.key_averages())
        acc = 0
        for evt in prof.events():
            acc += evt.cpu_time_total
        self_total = sum(e.self_cpu_time_total for e in prof.key_averages())
        kernels = [e for e in prof.key_averages() if e.device_type == DeviceType.CUDA]
        busy = sum(e.cuda_time_total for e in kernels)
    """
    assert [line for line, _ in found(text, "SS407")] == [1, 4]


# ---- SS501 -------------------------------------------------------------------------------------
def test_ss501_constant_tensor_moved_every_step_and_hoist_fix():
    text = in_step("mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1).cuda()")
    assert found(text, "SS501") == [
        (10, "torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1).cuda()")]
    diag = next(d for d in check(text) if d.code == "SS501")
    (fix,) = real_fixes(diag, src(text))
    fixed = apply_fix(src(text), fix)
    ast.parse(fixed)
    assert "    const_tensor = torch.tensor([0.485, 0.456, 0.406])" in fixed
    assert not [d for d in check(fixed) if d.code == "SS501"]


def test_ss501_device_keyword_and_names_set_once():
    text = in_step("w = torch.tensor(WEIGHTS, device='cuda')").replace(
        "import torch", "import torch\nWEIGHTS = [1.0, 2.0]")
    assert found(text, "SS501") == [(11, "torch.tensor(WEIGHTS, device='cuda')")]


def test_ss501_not_for_data_or_on_device_fills():
    body = "\n        ".join([
        "t = torch.tensor(y).cuda()",  # y changes every step
        "z = torch.zeros(4, device='cuda')",  # filled on the device, no copy
        "c = torch.tensor([1.0, 2.0])",  # stays on the host
    ])
    assert found(in_step(body), "SS501") == []


# ---- SS502 -------------------------------------------------------------------------------------
def test_ss502_iterator_created_in_window_and_fix():
    text = """
        from torch.profiler import profile, schedule
        with profile(schedule=schedule(wait=0, warmup=0, active=2)) as prof:
            for x, y in loader:
                model(x).sum().backward()
                prof.step()
    """
    assert found(text, "SS502") == [(3, "loader")]
    assert found(text.replace("schedule=schedule(wait=0, warmup=0, active=2)", ""), "SS502") == [
        (3, "loader")]
    diag = next(d for d in check(text) if d.code == "SS502")
    fixed = apply_fix(src(text), diag.fixes[0])
    assert fixed.splitlines()[1] == "batches = iter(loader)"
    assert "for x, y in batches:" in fixed
    assert not [d for d in check(fixed) if d.code == "SS502"]


def test_ss502_not_when_the_first_read_falls_in_a_skipped_step():
    text = """
        from torch.profiler import profile, schedule
        with profile(schedule=schedule(wait=1, warmup=1, active=2)) as prof:
            for x, y in loader:
                model(x).sum().backward()
                prof.step()
    """
    assert found(text, "SS502") == []


def test_ss502_not_with_an_iterator_made_before_the_window():
    text = """
        from torch.profiler import profile, schedule
        it = iter(loader)
        with profile() as prof:
            for _ in range(4):
                x = next(it)
                model(x).sum().backward()
                prof.step()
    """
    assert found(text, "SS502") == []
