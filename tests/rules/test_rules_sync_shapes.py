"""SS101 on shapes where a read is not a sync in every training step: a read under a periodic
guard written as part of a condition or as a flag, a batch read before the step moves it, a
decoding loop, a program that never leaves the host; and a read inside a helper the step calls."""

from __future__ import annotations

from .helpers import check, found


def _ss101(text: str) -> list:
    return [d for d in check(text) if d.code == "SS101"]


# ---- periodic guards -----------------------------------------------------------------------
def test_a_read_after_a_periodic_test_in_an_and_runs_only_on_those_steps():
    text = """
        import torch
        def fit(net, opt, loader, log_every):
            net.cuda()
            for i, (x, y) in enumerate(loader):
                x, y = x.cuda(), y.cuda()
                err = torch.nn.functional.mse_loss(net(x), y)
                err.backward()
                opt.step()
                if i % log_every == 0 and err.item() > 10.0:
                    print("diverging")
                if (i + 1) % 50 == 0 and float(err) > 1.0:
                    print("slow")
    """
    assert found(text, "SS101") == []


def test_a_read_after_an_every_step_test_in_an_and_is_still_every_step():
    text = """
        import torch
        def fit(net, opt, loader, warm):
            net.cuda()
            for i, (x, y) in enumerate(loader):
                x, y = x.cuda(), y.cuda()
                err = torch.nn.functional.mse_loss(net(x), y)
                err.backward()
                opt.step()
                if warm and err.item() > 10.0:
                    print("diverging")
    """
    assert found(text, "SS101") == [(9, "err.item()")]


def test_a_conditional_expression_reads_its_guards_as_an_if_does():
    text = """
        import torch
        def fit(net, opt, loader, log_every):
            net.cuda()
            for i, (x, y) in enumerate(loader):
                x, y = x.cuda(), y.cuda()
                err = torch.nn.functional.mse_loss(net(x), y)
                err.backward()
                opt.step()
                report = i % log_every == 0
                shown = err.item() if report else None
                big = i % log_every == 0 and err.item() > 10.0
    """
    assert found(text, "SS101") == []


def test_a_flag_set_from_a_periodic_test_guards_like_the_test():
    text = """
        import torch
        def fit(net, opt, loader, log_every):
            net.cuda()
            for step, (x, y) in enumerate(loader):
                x, y = x.cuda(), y.cuda()
                err = torch.nn.functional.mse_loss(net(x), y)
                err.backward()
                opt.step()
                report = step % log_every == 0
                if report:
                    print(err.item())
    """
    assert found(text, "SS101") == []
    every_step = text.replace("report = step % log_every == 0", "report = True")
    assert found(every_step, "SS101") == [(11, "err.item()")]


# ---- order within the iteration ------------------------------------------------------------
def test_a_batch_read_before_the_step_moves_it_is_a_host_read():
    text = """
        import torch
        def fit(net, opt, samples, device):
            for x, y in samples:
                count = x.sum().item()
                opt.zero_grad()
                x = x.to(device)
                y = y.to(device)
                err = torch.nn.functional.mse_loss(net(x), y)
                err.backward()
                opt.step()
                after = x.sum().item()
    """
    assert found(text, "SS101") == [(11, "x.sum().item()")]


def test_a_dict_batch_read_before_it_is_moved_is_a_host_read():
    text = """
        import torch
        def fit(net, opt, samples, device):
            for batch in samples:
                tokens = batch["ids"].ne(0).sum().item()
                opt.zero_grad()
                batch = {k: v.to(device) for k, v in batch.items()}
                err = net(batch["ids"]).mean()
                err.backward()
                opt.step()
                seen = batch["ids"].sum().item()
    """
    assert found(text, "SS101") == [(10, 'batch["ids"].sum().item()')]


def test_a_read_inside_a_nested_loop_that_moves_the_batch_is_not_known_to_be_on_the_host():
    text = """
        import torch
        def fit(net, opt, samples, device):
            for x, y in samples:
                for _ in range(100):
                    count = x.sum().item()
                    x = x.to(device)
                    err = net(x).mean()
                    err.backward()
                    opt.step()
    """
    assert found(text, "SS101") == [(5, "x.sum().item()")]


# ---- decoding loops --------------------------------------------------------------------------
DECODE_DECORATED = """
    import torch
    @torch.no_grad()
    def decode(net, ids, stop_ids, limit):
        for _ in range(limit):
            logits = forward_backward_func(net, ids, forward_only=True)
            next_token = logits[:, -1].argmax(-1)
            ids = torch.cat([ids, next_token[:, None]], dim=1)
            if next_token.item() in stop_ids:
                break
        return ids
"""

DECODE_IN_BLOCK = """
    import torch
    def decode(runner, ids, stop_ids, limit):
        with torch.inference_mode():
            for _ in range(limit):
                logits = runner.train_step(ids)
                next_token = logits[:, -1].argmax(-1)
                ids = torch.cat([ids, next_token[:, None]], dim=1)
                if next_token.item() in stop_ids:
                    break
        return ids
"""


def test_a_decoding_loop_without_gradients_is_not_a_training_step():
    for text in (DECODE_DECORATED, DECODE_IN_BLOCK):
        assert found(text, "SS101") == []
        (diag,) = [d for d in check(text) if d.code == "SS103"]
        assert "training" not in diag.message
        assert "evaluation or inference loop" in diag.message


def test_a_forward_only_call_is_no_training_evidence_even_with_gradients_on():
    text = DECODE_DECORATED.replace("    @torch.no_grad()\n", "")
    assert found(text, "SS101") == []
    training = text.replace("forward_only=True", "forward_only=False")
    assert found(training, "SS101") == [(7, "next_token.item()")]


def test_a_step_helper_with_gradients_on_still_trains():
    text = DECODE_IN_BLOCK.replace("with torch.inference_mode():", "with torch.inference_mode(False):")
    assert found(text, "SS101") == [(8, "next_token.item()")]


def test_a_profiled_decoding_loop_is_reported_as_profiled_not_training():
    text = """
        import torch
        @torch.inference_mode()
        def decode(runner, ids, stop_ids, limit, prof):
            for _ in range(limit):
                logits = runner.train_step(ids)
                next_token = logits[:, -1].argmax(-1)
                ids = torch.cat([ids, next_token[:, None]], dim=1)
                prof.step()
                if next_token.item() in stop_ids:
                    break
            return ids
    """
    (diag,) = _ss101(text)
    assert "profiled loop (line 4)" in diag.message and "training" not in diag.message


# ---- programs that stay on the host ----------------------------------------------------------
HOST_ONLY = """
    import torch
    def fit(net, opt, samples):
        for x, y in samples:
            opt.zero_grad()
            err = torch.nn.functional.mse_loss(net(x), y)
            err.backward()
            opt.step()
            print(err.item())
"""


def test_a_program_that_never_leaves_the_host_is_told_what_happens_on_a_gpu():
    (diag,) = _ss101(HOST_ONLY)
    assert diag.message.startswith("when this loop runs on a GPU, `.item()` copies the value")
    assert "in every step of the training loop (line 3)" in diag.message


def test_a_program_that_moves_its_tensors_is_told_plainly():
    for move in ("x = x.cuda()", "x = x.to(device)", "x = x.to(args.device)",
                 'x = torch.as_tensor(x, device="cuda:0")', "x = x.to(dev)",
                 "x = x.to(local_rank)", "x = x.to(args.gpu)"):
        text = HOST_ONLY.replace("opt.zero_grad()", f"opt.zero_grad()\n            {move}")
        (diag,) = _ss101(text)
        assert diag.message.startswith("`.item()` copies the value"), move


def test_a_program_on_the_cpu_by_name_is_told_what_happens_on_a_gpu():
    text = HOST_ONLY.replace("opt.zero_grad()", 'opt.zero_grad()\n            x = x.to("cpu")')
    (diag,) = _ss101(text)
    assert diag.message.startswith("when this loop runs on a GPU, ")


# ---- reads inside helpers the step calls -----------------------------------------------------
HELPERS = """
    import torch

    class Meters:
        def __init__(self):
            self.values = {}

        def update(self, **named):
            for key, value in named.items():
                if isinstance(value, torch.Tensor):
                    value = value.item()
                self.values[key] = value

    def report(err):
        shown = float(err)
        print(shown)

    def forward_to(err):
        report(err)

    def fit(net, opt, loader):
        meters = Meters()
        net.cuda()
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            opt.zero_grad()
            err = torch.nn.functional.mse_loss(net(x), y)
            err.backward()
            opt.step()
            {call}
"""


def _helper_findings(call: str) -> list[str]:
    return [d.message for d in _ss101(HELPERS.replace("{call}", call))]


def test_a_method_that_reads_its_keyword_values_is_reported_at_the_call():
    (message,) = _helper_findings("meters.update(err=err)")
    assert message.startswith("`meters.update` reads `err` on the host with `.item()` (line 10) "
                              "and waits for the device in every step of the training loop "
                              "(line 23)")


def test_a_function_that_converts_its_argument_is_reported_at_the_call():
    (message,) = _helper_findings("report(err)")
    assert message.startswith("`report` reads `err` on the host with `float()` (line 14)")


def test_a_helper_that_hands_the_value_on_is_followed_one_level_more():
    (message,) = _helper_findings("forward_to(err)")
    assert message.startswith("`forward_to` reads `err` on the host with `float()` in `report` "
                              "(line 14)")


def test_helper_calls_that_read_nothing_on_the_device_are_left_alone():
    assert _helper_findings("report(x.shape[0])") == []  # a number
    assert _helper_findings("meters.update(err=err.item())") != []  # the `.item()` itself
    assert all("meters.update" not in m for m in _helper_findings("meters.update(err=err.item())"))
    assert _helper_findings("report(len(loader))") == []


def test_a_helper_call_under_a_periodic_guard_is_not_every_step():
    text = HELPERS.replace("{call}", "if x.numel() % 100 == 0:\n                report(err)")
    assert _ss101(text) == []


def test_a_helper_name_defined_twice_is_not_followed():
    text = HELPERS.replace("{call}", "report(err)").replace(
        "def forward_to(err):", "def report(err, where):\n        pass\n\n    def forward_to(err):")
    assert _ss101(text) == []


def test_a_helper_defined_in_the_loop_is_checked_as_the_step_not_at_its_call():
    text = """
        import torch
        def fit(net, opt, loader):
            net.cuda()
            for x, y in loader:
                x, y = x.cuda(), y.cuda()
                def closure():
                    opt.zero_grad()
                    err = torch.nn.functional.mse_loss(net(x), y)
                    err.backward()
                    print(err.item())
                    return err
                opt.step(closure)
    """
    assert found(text, "SS101") == [(10, "err.item()")]


def test_the_editor_reports_a_helper_read_after_an_edit_of_the_caller_or_the_helper():
    from stepscope.rules import Config, check_source
    from stepscope.rules.incremental import DocumentChecker

    from .helpers import src

    every = Config(select=("SS",))
    first = src(HELPERS.replace("{call}", "report(err)"))
    checker = DocumentChecker("/project/train.py", every)
    assert checker.check(first) == check_source(first, "/project/train.py", every)
    edits = [first.replace("report(err)", "report(err)\n        total = 0"),
             first.replace("shown = float(err)", "shown = err"),
             first.replace("shown = float(err)", "shown = float(err)  # read"),
             first.replace("opt.zero_grad()", "opt.zero_grad()\n        n = 1")]
    for text in edits:
        assert checker.check(text) == check_source(text, "/project/train.py", every), text


def test_a_helper_that_reads_only_every_n_calls_is_left_alone():
    text = HELPERS.replace("{call}", "report(err)").replace(
        "def report(err):\n        shown = float(err)\n        print(shown)",
        "def report(err, calls=[0]):\n        calls[0] += 1\n"
        "        if calls[0] % 100 == 0:\n            print(float(err))")
    assert "if calls[0] % 100 == 0" in text
    assert _ss101(text) == []
