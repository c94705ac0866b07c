"""Shapes met in public training and benchmark code while measuring precision: what is reported
and what stays silent (docs/rules/README.md, "Precision on public code")."""

from __future__ import annotations

from .helpers import check, found


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


# ---- Shapes met on code the rules were not tuned on (issue: precise on unseen code) -----------
# Each test is a small program of our own that reproduces a pattern found in public projects.

TRAIN_STEP = """
import torch

def train(model, loader, optimizer, criterion, device):
    for step, (x, y) in enumerate(loader):
        out = model(x.to(device))
        loss = criterion(out, y.to(device))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        {body}
"""


def step_with(body: str) -> str:
    return TRAIN_STEP.replace("{body}", body)


def codes(text: str) -> list[tuple[str, int]]:
    from .helpers import check

    return [(d.code, d.line) for d in check(text)]


def test_ss101_message_names_the_training_loop():
    from .helpers import check

    (diag,) = [d for d in check(step_with("total = loss.item()")) if d.code == "SS101"]
    assert "in every step of the training loop (line 4)" in diag.message


def test_ss101_an_evaluation_loop_is_ss103_and_says_so():
    from .helpers import check

    text = """
        import torch
        @torch.no_grad()
        def evaluate(model, loader):
            correct = 0
            for x, y in loader:
                pred = model(x.cuda()).argmax(1)
                correct += (pred == y.cuda()).sum().item()
            return correct
    """
    (diag,) = [d for d in check(text) if d.code.startswith("SS10")]
    assert diag.code == "SS103" and diag.line == 7
    assert "evaluation or inference loop (line 5)" in diag.message
    assert found(text, "SS101") == []


def test_ss101_a_loop_through_step_helpers_is_training():
    text = """
        import torch
        def fit(self, loader):
            for batch in loader:
                loss = self.run_forward(batch)
                self.run_backward(loss)
                self.run_optimizer_step()
                self.log(loss.item())
    """
    assert found(text, "SS101") == [(7, "loss.item()")]


def test_ss101_leaves_cpu_tensors_from_the_loader_alone():
    # DLRM-like: the target comes straight from the loader and is moved only inside a helper
    body = "T = T.detach().cpu().numpy()\n        acc = (out.detach().cpu().numpy().round() == T).mean()"
    text = step_with(body).replace("for step, (x, y) in enumerate(loader):",
                                   "for step, (x, T) in enumerate(loader):").replace(
        "y.to(device)", "T.to(device)")
    assert found(text, "SS101") == [(11, "out.detach().cpu()")]


def test_ss101_leaves_numpy_values_alone():
    body = "arr = out.detach().cpu().numpy()\n        vals = [round(v.item(), 4) for v in arr[0]]"
    assert found(step_with(body), "SS101") == [(10, "out.detach().cpu()")]


def test_ss101_not_for_a_value_read_once_before_leaving_the_loop():
    body = ("if step == 100:\n            print(loss.item())\n"
            "        if step >= 1000:\n            final = loss.item()\n            break")
    assert found(step_with(body), "SS101") == []


def test_ss101_not_for_printed_strings_floats_or_debug_flags():
    body = ("print('step done')\n        print(f'lr {optimizer.param_groups[0][\"lr\"]:.4f}')\n"
            "        if args.debug:\n            print(loss.item())\n"
            "        if args.print_loss:\n            print(f'loss {loss}')")
    assert found(step_with(body), "SS101") == []


def test_ss101_not_in_a_short_warm_up_loop_or_a_test():
    warm_up = """
        import torch
        def warm_up(model, x, opt):
            for _ in range(3):
                loss = model(x).sum()
                loss.backward()
                opt.step()
                torch.cuda.synchronize()
    """
    assert found(warm_up, "SS101") == []
    named = warm_up.replace("range(3)", "range(n_iter)").replace(
        "def warm_up(model, x, opt):", "def warm_up(model, x, opt):\n            n_iter = 5")
    assert found(named, "SS101") == []
    from stepscope.rules import Config
    from stepscope.rules.engine import check_source

    from .helpers import src

    in_test = step_with("total = loss.item()")
    assert check_source(src(in_test), "/project/tests/test_train.py", Config()) == []
    as_test_function = in_test.replace("def train(", "def test_train(")
    assert found(as_test_function, "SS101") == []


def test_ss101_reports_the_optimizer_step_of_gradient_accumulation():
    text = step_with("").replace(
        "        optimizer.step()\n        optimizer.zero_grad()\n",
        "        if (step + 1) % accum_steps == 0:\n"
        "            optimizer.step()\n            optimizer.zero_grad()\n"
        "            logged = loss.item()\n")
    from .helpers import check

    (diag,) = [d for d in check(text) if d.code == "SS101"]
    assert diag.line == 11 and "every optimizer step" in diag.message
    assert "every batch when gradient accumulation is 1" in diag.message
    periodic = text.replace("% accum_steps", "% log_every")
    assert found(periodic, "SS101") == []  # a logging period, not the optimizer step


def test_ss101_reports_assert_while_and_math_on_a_tensor_every_step():
    body = ("assert torch.isfinite(loss).all(), 'diverged'\n"
            "        while loss > 10:\n            loss = loss / 2\n"
            "        if math.isnan(loss):\n            raise RuntimeError('nan')")
    text = step_with(body).replace("import torch", "import math\nimport torch")
    assert [t for _, t in found(text, "SS101")] == [
        "torch.isfinite(loss).all()", "loss > 10", "math.isnan(loss)"]


def test_ss101_bool_of_a_tensor_stays_a_sync():
    assert found(step_with("stop = bool(loss < 0.01)"), "SS101") == [(10, "bool(loss < 0.01)")]


def test_ss101_other_frameworks_are_left_alone():
    text = """
        import tensorflow as tf
        for x, y in dataset:
            with tf.GradientTape() as tape:
                loss = model(x)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.step()
            print(loss.numpy())
    """
    assert found(text, "SS101") == []


# ---- SS102 ------------------------------------------------------------------------------------
def test_ss102_one_sync_before_each_clock_reading_back_to_back():
    text = """
        import time, torch
        def compare(reference, fused, n):
            torch.cuda.synchronize()
            t1 = time.time()
            reference(n)
            torch.cuda.synchronize()
            t2 = time.time()
            fused(n)
            torch.cuda.synchronize()
            t3 = time.time()
            return t2 - t1, t3 - t2
    """
    assert found(text, "SS102") == []


def test_ss102_sync_start_one_call_sync_stop_inside_a_profiler():
    text = """
        import time, torch
        def once(fn, x):
            with torch.profiler.profile() as prof:
                torch.cuda.synchronize()
                start = time.time()
                fn(x)
                torch.cuda.synchronize()
                elapsed = time.time() - start
            return elapsed
    """
    assert found(text, "SS102") == []


def test_ss102_still_reports_a_sync_after_each_operation():
    text = """
        import time, torch
        def timed(encoder, decoder, head, x):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            a = encoder(x)
            torch.cuda.synchronize()
            b = decoder(a)
            torch.cuda.synchronize()
            c = head(b)
            torch.cuda.synchronize()
            return time.perf_counter() - t0
    """
    assert found(text, "SS102") == [(8, "torch.cuda.synchronize()")]


# ---- SS201 ------------------------------------------------------------------------------------
def test_ss201_not_around_work_that_is_not_on_the_device():
    text = """
        import time, torch
        def wait_for_rollout(self):
            t0 = time.perf_counter()
            trajectory = self.rollout_queue.get(timeout=0.5)
            trajectory = trajectory.to(self._device)
            waited = time.perf_counter() - t0
            t1 = time.perf_counter()
            compiled = torch.compile(self.model)
            compiled(trajectory)
            compile_time = time.perf_counter() - t1
            t2 = time.perf_counter()
            while not self.replay_buffer:
                self.policy(trajectory)
            generation = time.perf_counter() - t2
            return waited, compile_time, generation
    """
    assert found(text, "SS201") == []


def test_ss201_not_when_a_host_read_inside_already_waits():
    text = """
        import math, time, torch

        def log_loss(loss):
            return loss.item()

        def step(model, x, writer, metric):
            t0 = time.perf_counter()
            loss = model(x.cuda()).sum()
            log_loss(loss)
            a = time.perf_counter() - t0
            t1 = time.perf_counter()
            loss = model(x.cuda()).sum()
            if math.isnan(loss):
                raise RuntimeError
            b = time.perf_counter() - t1
            t2 = time.perf_counter()
            metric.update(model(x.cuda()))
            acc = metric.compute()
            c = time.perf_counter() - t2
            t3 = time.perf_counter()
            loss = model(x.cuda()).sum()
            writer.add_scalar("loss", loss.data, 0)
            d = time.perf_counter() - t3
            return a, b, c, d
    """
    assert found(text, "SS201") == []


def test_ss201_not_for_rates_over_many_steps():
    text = """
        import time, torch
        def train_epoch(model, loader, optimizer, meter):
            end = time.time()
            for x, y in loader:
                loss = model(x.cuda(), y.cuda())
                loss.backward()
                optimizer.step()
                meter.update(time.time() - end)
                end = time.time()
            start = time.time()
            for x, y in loader:
                model(x.cuda()).sum().backward()
                optimizer.step()
            epoch = time.time() - start
            return epoch
    """
    assert found(text, "SS201") == []


def test_ss201_reports_a_duration_in_print_and_a_private_model_attribute():
    text = """
        import time, torch
        class Worker:
            def score(self, tokens):
                tokens = tokens.cuda()
                t0 = time.perf_counter()
                logits = self._ref_model(tokens)
                print(f"reference model took {time.perf_counter() - t0:.3f}s")
                return logits
    """
    assert found(text, "SS201") == [(7, "time.perf_counter() - t0")]


def test_ss201_reports_a_benchmark_loop_without_a_sync():
    text = """
        import time, torch
        def bench(model, x, n=100):
            x = x.cuda()
            t0 = time.perf_counter()
            for _ in range(n):
                model(x)
            return (time.perf_counter() - t0) / n
    """
    assert found(text, "SS201") == [(7, "time.perf_counter() - t0")]


# ---- SS401 ------------------------------------------------------------------------------------
def test_ss401_not_when_the_data_is_used():
    text = """
        import torch
        from torch.profiler import profile
        def capture(fn, path):
            with profile(record_shapes=True, with_stack=True, profile_memory=True) as prof:
                fn()
            prof.export_chrome_trace(path)
        def shapes(fn):
            with profile(record_shapes=True, profile_memory=True) as prof:
                fn()
            print(prof.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_memory_usage"))
        def handed_on(fn, handler):
            with profile(with_stack=True, on_trace_ready=handler) as prof:
                fn()
    """
    assert found(text, "SS401") == []


def test_ss401_reports_unused_data_and_timed_regions():
    text = """
        import time, torch
        from torch.profiler import profile
        def unused(fn):
            with profile(record_shapes=True, with_stack=True) as prof:
                fn()
            print(prof.key_averages().table(sort_by="cuda_time_total"))
        def timed(fn, path):
            with profile(with_stack=True) as prof:
                start = time.perf_counter()
                fn()
                elapsed = time.perf_counter() - start
            prof.export_chrome_trace(path)
            return elapsed
    """
    from .helpers import check

    diags = [d for d in check(text) if d.code == "SS401"]
    assert [(d.line, "nothing here reads" in d.message) for d in diags] == [
        (4, True), (4, True), (8, False)]
    assert "timed with a wall clock (line 11)" in diags[2].message


# ---- SS402 / SS404 / SS502 --------------------------------------------------------------------
def test_ss402_and_ss502_a_profiler_chosen_with_a_conditional_expression():
    text = """
        import torch
        from contextlib import nullcontext
        def train(model, loader, optimizer, args):
            with torch.profiler.profile() if args.profile else nullcontext() as prof:
                for batch in loader:
                    model(batch).sum().backward()
                    optimizer.step()
    """
    assert found(text, "SS402") == [(4, "with torch.profiler.profile()")]
    assert found(text, "SS502") == [(5, "loader")]


def test_ss402_steps_run_through_helper_methods():
    text = """
        import torch
        class Runner:
            def profile_steps(self, loader):
                with torch.profiler.profile() as prof:
                    for batch in loader:
                        loss = self.run_forward(batch)
                        self.run_backward(loss)
                        self.run_optimizer_step()
    """
    assert found(text, "SS402") == [(4, "with torch.profiler.profile()")]


def test_ss402_not_after_a_warm_up_by_hand():
    text = """
        import torch
        def kernel_time(m, x, g):
            for _ in range(2):
                y = m(x)
                y.backward(g)
            with torch.profiler.profile() as prof:
                for _ in range(5):
                    y = m(x)
                    y.backward(g)
            return prof.key_averages()
    """
    assert found(text, "SS402") == []


def test_ss502_a_loader_loop_that_is_itself_the_profiled_window():
    text = """
        import torch
        def train(model, loader, optimizer):
            prof = torch.profiler.profile(
                schedule=torch.profiler.schedule(wait=0, warmup=0, active=3))
            prof.start()
            for batch in loader:
                model(batch).sum().backward()
                optimizer.step()
                prof.step()
            prof.stop()
    """
    assert found(text, "SS502") == [(6, "loader")]
    named = """
        import torch
        def train(model, loader, optimizer):
            prof = torch.profiler.profile()
            with prof:
                for batch in loader:
                    model(batch).sum().backward()
                    optimizer.step()
    """
    assert found(named, "SS502") == [(5, "loader")]
    assert found(named, "SS402") == [(4, "with prof:")]


# ---- SS405 ------------------------------------------------------------------------------------
def test_ss405_an_unrelated_existence_check_does_not_silence_it():
    text = """
        import os
        import torch
        def train(model, cfg_path):
            if os.path.isfile(cfg_path):
                load(cfg_path)
            with torch.profiler.profile() as prof:
                model()
            prof.export_chrome_trace("trace.json")
            prof.export_chrome_trace(os.path.join("traces", "step.json"))
    """
    assert found(text, "SS405") == [(8, '"trace.json"'), (9, 'os.path.join("traces", "step.json")')]
    checked = text.replace("if os.path.isfile(cfg_path):", 'if os.path.isfile("trace.json"):')
    assert found(checked, "SS405") == [(9, 'os.path.join("traces", "step.json")')]


# ---- SS501 ------------------------------------------------------------------------------------
def test_ss501_constants_with_keyword_arguments_and_math_constants():
    body = ("scale = torch.tensor([0.5] * 1024, dtype=torch.float32).to(device)\n"
            "        grid = torch.arange(16, dtype=torch.float32).reshape(4, 4).to(self.device)\n"
            "        fill = torch.tensor(-math.inf).to(out)")
    text = step_with(body).replace("import torch", "import math\nimport torch")
    assert [t for _, t in found(text, "SS501")] == [
        "torch.tensor([0.5] * 1024, dtype=torch.float32).to(device)",
        "torch.arange(16, dtype=torch.float32).reshape(4, 4).to(self.device)",
        "torch.tensor(-math.inf).to(out)"]


def test_ss501_a_filled_tensor_moved_every_step_and_what_is_left_alone():
    body = ("mask = torch.ones(x.shape).cuda()\n"
            "        half = torch.tensor([1.0, 2.0]).to(torch.float16)\n"
            "        try:\n            pass\n        except OverflowError:\n"
            "            grad_norm = torch.tensor(0.0).cuda()")
    from .helpers import check

    diags = [d for d in check(step_with(body)) if d.code == "SS501"]
    assert [d.line for d in diags] == [10]
    assert "filled on the host" in diags[0].message and "device=" in diags[0].message


# ---- Shapes met on the held-out projects (see docs/rules/README.md) --------------------------
def test_ss101_not_in_a_sweep_over_a_few_settings():
    text = """
        import torch
        for stride, channels in [(1, 32), (1, 128), (2, 32)]:
            model = Block(stride, channels).cuda()
            out = model(x)
            out.mean().backward()
            torch.cuda.synchronize()
            print("max error:", (out - reference(x)).abs().max().item())
    """
    assert found(text, "SS101") == []


def test_ss201_generate_copies_to_the_host_and_cpu_devices():
    text = """
        import time, torch
        def run(model, batch, cpu_device, m):
            start = time.perf_counter()
            with torch.no_grad():
                out = model.generate(**batch, max_new_tokens=32)
            a = time.perf_counter() - start
            t = time.time()
            outputs = model(batch)
            outputs = [o.to(cpu_device) for o in outputs]
            b = time.time() - t
            t1 = time.perf_counter()
            permute_model(m.module, dump=True)
            c = time.perf_counter() - t1
            return a, b, c
    """
    assert found(text, "SS201") == []


def test_ss201_a_no_sync_context_is_not_a_synchronisation():
    text = """
        import time, torch
        def train(fabric, model, loader, optimizer):
            for batch in loader:
                t0 = time.time()
                with fabric.no_backward_sync(model, enabled=True):
                    loss = model(batch.cuda(non_blocking=True))
                    fabric.backward(loss)
                optimizer.step()
                t1 = time.time()
                dt = t1 - t0
    """
    assert found(text, "SS201") == [(10, "t1 - t0")]


def test_ss301_offsets_and_ranks_are_numbers():
    text = """
        from torch.profiler import record_function
        def stage(batch_offset, rank, stage_idx):
            with record_function(f"## stage {stage_idx} batch {batch_offset} rank {rank} ##"):
                pass
    """
    assert found(text, "SS301") == []


def test_ss404_a_profiler_entered_under_another_name_is_stepped():
    text = """
        import torch
        def train(self, loader):
            prof = torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=1, active=2))
            with prof as p:
                for batch in loader:
                    self.model(batch).sum().backward()
                    p.step()
    """
    assert found(text, "SS404") == []
    assert found(text.replace("p.step()", "pass"), "SS404") == [(4, "with prof as p:")]


def test_ss407_not_for_kernel_rows_kept_in_a_loop():
    text = """
        def gemm_time(prof):
            total = 0.0
            for evt in prof.events():
                if evt.device_type == DeviceType.CUDA and "gemm" in evt.name:
                    total += evt.device_time
            return total
    """
    assert found(text, "SS407") == []


# ---- shapes met on the third set (see docs/rules/README.md) -------------------------------------

def test_ss101_a_divisible_by_helper_is_a_periodic_guard():
    text = """
        import torch
        def divisible_by(num, den):
            return (num % den) == 0
        def train(model, optim, train_loader, val_loader, num_batches, validate_every):
            for i in range(num_batches):
                loss = model(next(train_loader))
                loss.backward()
                optim.step()
                if divisible_by(i, validate_every):
                    with torch.no_grad():
                        val_loss = model(next(val_loader))
                        print(f"validation loss: {val_loss.item():.4f}")
    """
    assert found(text, "SS101") == []
    every_step = text.replace("if divisible_by(i, validate_every):", "if True:")
    assert found(every_step, "SS101") == [(12, "val_loss.item()")]


def test_ss101_a_periodic_evaluation_beside_an_accumulation_flag_is_periodic():
    text = """
        def train(model, optimizer, loader, state, eval_interval, validate):
            for step, batch in enumerate(loader):
                is_accumulating = (step + 1) % 4 != 0
                loss = model(batch)
                loss.backward()
                if not is_accumulating:
                    optimizer.step()
                    state["step_count"] += 1
                if not is_accumulating and state["step_count"] % eval_interval == 0:
                    val_loss = validate(model)
                    log({"val_loss": val_loss.item()})
    """
    assert found(text, "SS101") == []


def test_ss101_a_name_reassigned_from_item_is_a_number_below():
    text = """
        import math
        def search(trainer, loader):
            best = float("inf")
            for i, batch in enumerate(loader):
                loss = trainer.batch_outputs(batch)["loss"]
                loss.backward()
                loss = loss.detach().cpu().item()
                if math.isnan(loss) or loss > 4 * best:
                    break
                trainer.optimizer.step()
                if loss < best:
                    best = loss
    """
    assert found(text, "SS101") == [(7, "loss.detach().cpu()")]


def test_ss101_a_tensor_read_before_it_is_reassigned_still_syncs():
    text = """
        def train(model, optimizer, loader, best):
            for batch in loader:
                loss = model(batch)
                loss.backward()
                optimizer.step()
                if loss < best:
                    best = 0
                loss = float(0)
    """
    assert found(text, "SS101") == [(6, "loss < best")]


def test_ss101_update_params_is_a_training_step():
    text = """
        def train(model, optim_wrapper, loader, logger):
            for idx, inputs in enumerate(loader):
                loss = model(**inputs).loss
                optim_wrapper.update_params(loss)
                logger.info(f"loss: {loss.item():.3f}")
    """
    assert found(text, "SS101") == [(5, "loss.item()")]
    assert found(text, "SS103") == []


def test_ss501_an_evaluation_due_after_an_interval_runs_now_and_then():
    text = """
        import torch
        def run(self, loader, device):
            for i, batch in enumerate(loader):
                self.model(batch).sum().backward()
                self.optimizer.step()
                if self.global_step - self.latest_eval_step >= self.eval_interval:
                    stats = torch.zeros((2,), dtype=torch.float32).to(device)
                    self.evaluate(stats)
    """
    assert found(text, "SS501") == []


def test_ss201_a_generation_pipeline_returns_host_results():
    text = """
        import time, torch
        def bench(pipe, n):
            start = time.perf_counter()
            for _ in range(n):
                pipe(prompt="hello world", num_inference_steps=20)
            end = time.perf_counter()
            return (end - start) / n
    """
    assert found(text, "SS201") == []


def test_ss102_synchronize_branches_for_two_backends_count_once():
    text = """
        import time, torch
        def timed(fn, with_sync):
            start = time.perf_counter()
            result = fn()
            if with_sync:
                if is_cuda_available():
                    torch.cuda.synchronize()
                elif is_musa_available():
                    torch.musa.synchronize()
            elapsed = time.perf_counter() - start
            return result, elapsed
    """
    assert found(text, "SS102") == []


def test_ss101_a_number_reset_before_branches_that_set_a_tensor_is_still_a_tensor():
    text = """
        def train(model, optimizer, loader, use_hidden, tr_loss):
            for batch in loader:
                rep_loss = 0.0
                if use_hidden:
                    rep_loss = model.hidden_loss(batch)
                loss = model(batch) + rep_loss
                loss.backward()
                optimizer.step()
                if use_hidden:
                    tr_loss += rep_loss.item()
    """
    assert found(text, "SS101") == [(10, "rep_loss.item()")]


def test_ss101_a_short_inner_loop_repeats_with_its_outer_step_loop():
    text = """
        def train(netD, optimizerD, criterion, pic, num_epochs):
            num_train_batch = 1
            for epoch in range(num_epochs):
                for i in range(num_train_batch):
                    output = netD(pic).view(-1)
                    err = criterion(output)
                    err.backward()
                    D_x = output.mean().item()
                    optimizerD.step()
    """
    assert found(text, "SS101") == [(8, "output.mean().item()")]
    once = text.replace("for epoch in range(num_epochs):", "if num_epochs:")
    assert found(once, "SS101") == []


# SS406: asking for CUDA activities matters only in a program that can run without CUDA. Public
# code that profiles CUDA is almost always CUDA-only (benchmarks, kernels, trainers that assert a
# GPU): it fails loudly where CUDA is missing, before a CPU-only trace could pass for a GPU one.
def test_ss406_a_script_with_a_cpu_fallback_that_always_asks_for_cuda():
    # a profiling script of a research project: the device falls back to the CPU, the profiler
    # asks for CUDA whatever the device
    script = """
        import torch
        import torch.nn as nn
        import torch.profiler
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        net = nn.Linear(8, 4).to(device)
        batch = torch.randn(16, 8).to(device)
        with torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU,
                        torch.profiler.ProfilerActivity.CUDA],
            record_shapes=True,
        ) as prof:
            net(batch)
    """
    assert [line for line, _ in found(script, "SS406")] == [8]
    # a benchmark whose device is an option (nanoGPT's bench.py: `device = 'cuda'`, overridden
    # from the command line, and a CPU branch for autocast)
    configurable = """
        import torch
        device = 'cuda'
        exec(open('configurator.py').read())
        device_type = 'cuda' if 'cuda' in device else 'cpu'
        with torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
            schedule=torch.profiler.schedule(wait=5, warmup=5, active=5),
        ) as prof:
            for k in range(20):
                step()
                prof.step()
    """
    assert [line for line, _ in found(configurable, "SS406")] == [6]
    # the device from a `--device` option that offers the CPU, then a helper ending in "cpu"
    option = """
        import argparse
        import torch
        from torch.profiler import profile, ProfilerActivity
        parser = argparse.ArgumentParser()
        parser.add_argument("--device", default="cuda", choices=["cpu", "cuda"])
        args = parser.parse_args()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            torch.zeros(10, device=args.device)
    """
    assert [line for line, _ in found(option, "SS406")] == [7]
    helper = """
        import torch
        from torch.profiler import profile, ProfilerActivity
        def pick_device():
            if torch.cuda.is_available():
                return torch.device("cuda")
            return torch.device("cpu")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            model(x.to(pick_device()))
    """
    assert [line for line, _ in found(helper, "SS406")] == [7]


def test_ss406_leaves_cuda_only_programs_and_conditional_activities_alone():
    # a CPU-only fall-back map_location and a `.cpu()` of results: still a CUDA-only program
    cuda_only = """
        import torch
        from torch.profiler import profile, ProfilerActivity
        state = torch.load("ckpt.pt", map_location="cpu")
        x = torch.randn(1024, 1024, device="cuda")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            y = x @ x
        print(y.to("cpu"))
    """
    assert found(cuda_only, "SS406") == []
    # a record-run training script that asserts a GPU before choosing anything
    asserts_gpu = """
        import torch
        from torch.profiler import profile, ProfilerActivity
        assert torch.cuda.is_available()
        device = "cuda" if torch.cuda.is_available() else "cpu"
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            train_step()
    """
    assert found(asserts_gpu, "SS406") == []
    # activities chosen with the device (a library profiler, an MNIST example)
    appended = """
        import torch
        from torch.profiler import profile, ProfilerActivity
        device = "cuda" if torch.cuda.is_available() else "cpu"
        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        with profile(activities=activities) as prof:
            run()
    """
    assert found(appended, "SS406") == []
    by_expression = """
        import torch
        from torch.profiler import profile, ProfilerActivity
        device = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")
        cuda = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
        with profile(activities=cuda if device.type == "cuda" else [ProfilerActivity.CPU]) as prof:
            run()
    """
    assert found(by_expression, "SS406") == []


def test_ss406_leaves_tests_alone():
    text = """
        import torch
        from torch.profiler import profile, ProfilerActivity
        device = "cuda" if torch.cuda.is_available() else "cpu"
        def test_profiles_kernels():
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                run(device)
    """
    assert [d.line for d in check(text) if d.code == "SS406"] == [5]
    for path in ("/project/tests/test_profiler.py", "/project/test_profiler.py"):
        assert [d for d in check(text, path=path) if d.code == "SS406"] == []


# ---- SS201: what makes the host wait, devices handed in, chained per-step timers -------------
def test_ss201_a_boolean_mask_or_cpu_index_of_a_device_tensor_waits():
    text = """
        import time, torch
        def score(net, feats):
            feats = feats.cuda()
            t0 = time.perf_counter()
            logits = net(feats)
            keep = logits.max(dim=1).values > 0.5
            kept = logits[keep]
            a = time.perf_counter() - t0
            t1 = time.perf_counter()
            logits = net(feats)
            positive = logits[logits > 0]
            b = time.perf_counter() - t1
            t2 = time.perf_counter()
            order = torch.randperm(feats.shape[0])
            logits = net(feats)
            shuffled = logits[order]
            c = time.perf_counter() - t2
            t3 = time.perf_counter()
            logits = net(feats)
            hits = torch.nonzero(logits.argmax(1) == 3)
            d = time.perf_counter() - t3
            return a, b, c, d, kept, positive, shuffled, hits
    """
    assert found(text, "SS201") == []


def test_ss201_integer_and_slice_indexes_do_not_wait():
    text = """
        import time, torch
        def score(net, feats):
            feats = feats.cuda()
            t0 = time.perf_counter()
            logits = net(feats)
            first = logits[0]
            head = logits[:, :10]
            elapsed = time.perf_counter() - t0
            return first, head, elapsed
    """
    assert found(text, "SS201") == [(8, "time.perf_counter() - t0")]


def test_ss201_a_blocking_copy_of_the_batch_first_in_a_per_step_interval_waits():
    text = """
        import time, torch
        def fit(net, batches, opt):
            for images, labels in batches.loader:
                t0 = time.perf_counter()
                images = images.cuda()
                labels = labels.to("cuda")
                loss = torch.nn.functional.cross_entropy(net(images), labels)
                loss.backward()
                opt.step()
                step_s = time.perf_counter() - t0
    """
    assert found(text, "SS201") == []
    unpacked = text.replace("for images, labels in batches.loader:", "for batch in batches.loader:\n"
                            "                images, labels = batch")
    assert found(unpacked, "SS201") == []
    pinned_unpacked = unpacked.replace("images.cuda()", "images.cuda(non_blocking=True)").replace(
        'labels.to("cuda")', 'labels.to("cuda", non_blocking=True)')
    assert found(pinned_unpacked, "SS201") == [(11, "time.perf_counter() - t0")]
    pinned = text.replace('images.cuda()', 'images.cuda(non_blocking=True)').replace(
        'labels.to("cuda")', 'labels.to("cuda", non_blocking=True)')
    assert found(pinned, "SS201") == [(10, "time.perf_counter() - t0")]


def test_ss201_a_copy_after_the_device_work_or_outside_a_loop_does_not_count():
    text = """
        import time, torch
        def fit(net, loader, opt):
            for images, labels in loader:
                images = images.cuda(non_blocking=True)
                t0 = time.perf_counter()
                out = net(images)
                labels = labels.cuda()
                loss = torch.nn.functional.cross_entropy(out, labels)
                loss.backward()
                opt.step()
                step_s = time.perf_counter() - t0
        def once(net, images):
            t0 = time.perf_counter()
            out = net(images.cuda())
            return time.perf_counter() - t0
    """
    assert found(text, "SS201") == [(11, "time.perf_counter() - t0"),
                                    (15, "time.perf_counter() - t0")]


def test_ss201_rpc_waits_and_remote_only_work_are_not_reported():
    text = """
        import time, torch
        import torch.distributed.rpc as rpc
        import torch.distributed.autograd as dist_autograd
        def run_trainer(net, ps_rref, opt, batches):
            for x, y in batches:
                t0 = time.perf_counter()
                fut = rpc.rpc_async("ps", torch.add, args=(x, y))
                out = net(x.cuda(non_blocking=True))
                total = fut.wait()
                a = time.perf_counter() - t0
                t1 = time.perf_counter()
                params = ps_rref.rpc_sync().get_params()
                grads = ps_rref.remote().forward(x).to_here()
                b = time.perf_counter() - t1
                t2 = time.perf_counter()
                with dist_autograd.context() as context_id:
                    loss = net(x.cuda(non_blocking=True)).sum()
                    dist_autograd.backward(context_id, [loss])
                    opt.step(context_id)
                c = time.perf_counter() - t2
                t3 = time.perf_counter()
                futs = [rpc.rpc_async("w", torch.mul, args=(x, 2)) for _ in range(4)]
                out = net(x.cuda(non_blocking=True))
                torch.futures.wait_all(futs)
                d = time.perf_counter() - t3
                t4 = time.perf_counter()
                remote_out = ps_rref.rpc_async().forward(x)
                e = time.perf_counter() - t4
    """
    assert found(text, "SS201") == []


def test_ss201_a_collective_or_event_wait_does_not_make_the_host_wait():
    text = """
        import time, torch
        import torch.distributed as dist
        def step(net, x, event):
            x = x.cuda()
            t0 = time.perf_counter()
            out = net(x)
            work = dist.all_reduce(out, async_op=True)
            work.wait()
            event.wait()
            elapsed = time.perf_counter() - t0
            return elapsed
    """
    assert found(text, "SS201") == [(10, "time.perf_counter() - t0")]


def test_ss201_reports_a_device_handed_in_by_the_caller():
    text = """
        import time
        import torch

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

        def train(model, batches, optimizer, device):
            for x, y in batches:
                x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
                t0 = time.time()
                out = model(x)
                loss = torch.nn.functional.mse_loss(out, y)
                loss.backward()
                optimizer.step()
                dt = time.time() - t0

        def bench(model, x, dev):
            t0 = time.perf_counter()
            model(x)
            return time.perf_counter() - t0

        if __name__ == "__main__":
            train(Net().to(device), make_batches(), make_optimizer(), device)
    """
    assert found(text, "SS201") == [(14, "time.time() - t0"), (19, "time.perf_counter() - t0")]


def test_ss201_a_device_parameter_in_a_module_without_cuda_is_not_reported():
    text = """
        import time
        import torch

        def train(model, batches, optimizer, device):
            for x, y in batches:
                x, y = x.to(device), y.to(device)
                t0 = time.time()
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
                optimizer.step()
                dt = time.time() - t0

        def other(model, x):
            t0 = time.perf_counter()
            model(x)
            return time.perf_counter() - t0
    """
    assert found(text, "SS201") == []
    with_cuda = text.replace("import torch\n", "import torch  # on cuda where there is one\n")
    assert found(with_cuda, "SS201") == [(11, "time.time() - t0")]


def test_ss201_reports_a_chained_timer_kept_per_step():
    text = """
        import time, torch
        def train(model, batches, optimizer, log):
            t0 = time.time()
            for step, (x, y) in enumerate(batches):
                loss = model(x.cuda(non_blocking=True), y.cuda(non_blocking=True))
                loss.backward()
                optimizer.step()
                dt = time.time() - t0
                t0 = time.time()
                log.info(f"step {step}: {dt:.3f}s")
    """
    assert found(text, "SS201") == [(8, "time.time() - t0")]
    printed = text.replace('log.info(f"step {step}: {dt:.3f}s")', 'print(f"step: {dt * 1000:.1f} ms")')
    assert found(printed, "SS201") == [(8, "time.time() - t0")]
    printed_loss = text.replace('log.info(f"step {step}: {dt:.3f}s")', 'print(f"{loss} {dt}")')
    assert found(printed_loss, "SS201") == []


def test_ss201_not_for_a_chained_timer_that_accumulates():
    text = """
        import time, torch
        def train(model, batches, optimizer, meter):
            t0 = time.time()
            times = []
            total = 0.0
            for x, y in batches:
                loss = model(x.cuda(non_blocking=True), y.cuda(non_blocking=True))
                loss.backward()
                optimizer.step()
                dt = time.time() - t0
                times.append(dt)
                t0 = time.time()
            t1 = time.time()
            for x, y in batches:
                model(x.cuda(non_blocking=True), y.cuda(non_blocking=True)).backward()
                optimizer.step()
                total += time.time() - t1
                t1 = time.time()
            return times, total
    """
    assert found(text, "SS201") == []


def test_ss201_a_chained_link_waits_where_the_loop_reads_a_value_after_the_next_start():
    text = """
        import time, torch
        def train(model, batches, optimizer, log):
            t0 = time.time()
            for x, y in batches:
                loss = model(x.cuda(non_blocking=True), y.cuda(non_blocking=True))
                loss.backward()
                optimizer.step()
                dt = time.time() - t0
                t0 = time.time()
                log.info(f"loss {loss.item():.3f} in {dt:.3f}s")
    """
    assert found(text, "SS201") == []
