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
