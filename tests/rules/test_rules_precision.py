"""Shapes met in public training and benchmark code while measuring precision: what is reported
and what stays silent (docs/rules/README.md, "Precision on public code")."""

from __future__ import annotations

from .helpers import found


def test_ss403_reports_warmup_zero_before_a_training_window():
    text = """
        import torch
        from torch.profiler import ProfilerActivity, profile
        def profile_model(model, inputs, model_iter_fn, args, handler):
            with profile(
                activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                schedule=torch.profiler.schedule(wait=0, warmup=0, active=3),
                on_trace_ready=handler,
            ) as prof:
                for i in range(args.repeat):
                    model_iter_fn(model, inputs)
                    prof.step()
    """
    assert found(text, "SS403") == [(6, "warmup=0")]


def test_ss403_leaves_kernel_timing_with_device_only_activities_alone():
    direct = """
        import torch
        def bench(fn, num_tests):
            with torch.profiler.profile(
                activities=[torch.profiler.ProfilerActivity.CUDA],
                schedule=torch.profiler.schedule(wait=1, warmup=0, active=1, repeat=1),
            ) as prof:
                for _ in range(2):
                    for _ in range(num_tests):
                        fn()
                    prof.step()
    """
    named = """
        import torch
        def bench(fn, num_tests):
            schedule = torch.profiler.schedule(wait=1, warmup=0, active=1, repeat=1)
            profiler = torch.profiler.profile(
                activities=[torch.profiler.ProfilerActivity.CUDA], schedule=schedule)
            with profiler:
                for _ in range(2):
                    fn()
                    profiler.step()
    """
    assert found(direct, "SS403") == []
    assert found(named, "SS403") == []
    with_cpu = named.replace("[torch.profiler.ProfilerActivity.CUDA]",
                             "[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]")
    assert found(with_cpu, "SS403") == [(3, "warmup=0")]


def test_ss301_reads_whole_parts_of_names_not_substrings():
    text = """
        import torch
        from torch.profiler import record_function
        def run(dataset, problem, profile_name, max_tokens, input_ids, user_prompt, filePath):
            torch.cuda.nvtx.range_push(f"{dataset}_{problem}")
            with record_function(f"{profile_name}/{max_tokens}/{len(input_ids)}"):
                pass
            with record_function(str(dataset)):
                pass
            with record_function(f"ask {user_prompt}"):
                pass
            torch.cuda.nvtx.range_push(f"load {filePath}")
    """
    assert [t for _, t in found(text, "SS301")] == ['f"ask {user_prompt}"', 'f"load {filePath}"']


def test_ss201_counts_a_copy_to_the_host_as_synchronisation():
    text = """
        import time
        import torch
        def inf(model):
            x = torch.ones((1, 3, 224, 224)).cuda()
            start_t = time.perf_counter()
            with torch.no_grad():
                output = model(x).sum().to("cpu")
            end_t = time.perf_counter()
            return end_t - start_t
        def launch_only(net, x):
            x = x.cuda()
            start_time = time.perf_counter()
            out = net(x)
            end_time = time.perf_counter()
            return end_time - start_time
    """
    assert found(text, "SS201") == [(15, "end_time - start_time")]
