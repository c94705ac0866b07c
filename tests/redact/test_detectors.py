"""Each detector: what it must find, and the near misses it must leave alone."""

from __future__ import annotations

import pytest

from stepscope.redact.detect import Known, find_hits, random_looking, redact_text
from stepscope.redact.redactor import Redactor, would_redact


def found(text: str, *, strict: bool = False, known: Known = Known()) -> list[tuple[str, str]]:
    return [(h.kind, text[h.start:h.end]) for h in find_hits(text, strict=strict, known=known)]


@pytest.mark.parametrize("text, secret", [
    ("owner jane.doe@acme-corp.com", "jane.doe@acme-corp.com"),
    ("mail: a+b@lab.example.ac.uk", "a+b@lab.example.ac.uk"),
])
def test_email_addresses(text, secret):
    assert found(text) == [("email", secret)]


@pytest.mark.parametrize("text", ["Dequeue@aclnnMm", "fn@module.py", "x@v1.2.3", "@torch.compile", "kernel@0x7f00"])
def test_email_near_misses(text):
    assert found(text, strict=True) == []


@pytest.mark.parametrize("text, secret, what", [
    ("key AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "AWS access key"),
    ("ghp_" + "a1B2c3D4e5" * 4, "ghp_" + "a1B2c3D4e5" * 4, "GitHub token"),
    ("glpat-" + "x9Y8z7W6v5U4t3S2r1Q0", "glpat-" + "x9Y8z7W6v5U4t3S2r1Q0", "GitLab token"),
    ("login hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh", "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh", "Hugging Face token"),
    ("sk-proj-" + "T3stK3y" * 4, "sk-proj-" + "T3stK3y" * 4, "API key (sk-...)"),
    ("xoxb-123456789012-abcdefABCDEF", "xoxb-123456789012-abcdefABCDEF", "Slack token"),
    ("AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "Google API key"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "JSON Web Token"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY----- tail",
     "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----", "private key block"),
    ("Authorization: Bearer abcDEF123456ghiJKL", "abcDEF123456ghiJKL", "bearer token"),
    ("https://bob:s3cr3t@10.0.0.5/x", "bob:s3cr3t", "credentials in a URL"),
    ("password=hunter2", "hunter2", "value of `password`"),
    ("db_secret: 'p@ss w0rd'", "p@ss w0rd", "value of `db_secret`"),
    ("--hf-token AbCdEf1234567890", "AbCdEf1234567890", "value of `hf-token`"),
])
def test_tokens_and_keys(text, secret, what):
    hits = [h for h in find_hits(text) if h.kind == "token"]
    assert [(h.kind, text[h.start:h.end], h.what) for h in hits] == [("token", secret, what)]


@pytest.mark.parametrize("text", [
    "max_token: 2048", "eos_token=</s>", "pad_token=<pad>", "num_tokens: 512", "sort_key=name", "password=***",
    "token_len=128", "mask-generator", "x_hf_layer_weights_abcdefghijklmnopqrstuvwxyz", "AKIA_NOT_A_KEY",
    "api_key=${API_KEY}", "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
])
def test_token_near_misses(text):
    assert found(text, strict=True) == []


def test_random_strings_only_in_labels_and_never_identifiers():
    secret = "Xk9fP2qLm8ZtR4vB7nW1"
    assert found(f"step {secret}", strict=True) == [("token", secret)]
    assert found(f"step {secret}") == []  # not a label: no guessing
    for name in ["MaxPoolGradWithArgmaxV1", "LinearWithGradAccumulationFP8", "fp5r5pk7bndvtfxhvsvzndl5pa42kyv4kgpya5imdc",
                 "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT320x224x64_MI16x16x1_SN_LDSB0_AFC",
                 "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off",
                 "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEE",
                 "6DBB43BA7622473C8658D9615ABBFA77", "sq32sk32785sqsq32sqsk32785"]:
        assert not random_looking(name), name
        assert found(name, strict=True) == [], name


@pytest.mark.parametrize("text, private", [
    ("/home/jane/proj/train.py(12): forward", "home/jane/proj"),
    # the anchor is the user's folder: one part earlier leaks `jane`, one later eats the file name
    ("/home/jane/train.py(3): f", "home/jane"), ("cd /home/jane", "home/jane"), ("/Users/jane.doe", "Users/jane.doe"),
    ("/Users/jane/work/x.py", "Users/jane/work"),
    ("C:\\Users\\Jane Doe\\proj\\train.py", "Users\\Jane Doe\\proj"),
    ("/private/home/anupamb/step_based_trace_2543932.json", "private/home/anupamb"),
    ("/zhang-x3/users/ml2585/logs/t.json", "zhang-x3/users/ml2585/logs"),
    ("/root/out/async/trace.json", "root/out/async"),
    ("/tmp/torchinductor_bcoutinho/qa/cqaok.py", "tmp/torchinductor_bcoutinho/qa"),
    ("~/proj/x.py", "proj"),
    ("file:///home/jane/x.json", "home/jane"),
])
def test_private_paths_keep_root_and_file_name(text, private):
    assert found(text) == [("path", private)]


def test_library_tail_stays_so_library_frames_stay_library_frames():
    r = Redactor()
    frame = "/home/jane/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py(1501): _call_impl"
    assert r.redact(frame) == "/<path:1>/lib/python3.11/site-packages/torch/nn/modules/module.py(1501): _call_impl"
    assert r.redact("/home/jane/proj/train.py(12): forward") == "/<path:2>/train.py(12): forward"
    assert r.redact("/home/jane/proj/model.py(3): f") == "/<path:2>/model.py(3): f"  # same folder, same number


@pytest.mark.parametrize("text", [
    "/tmp/torchinductor_root/qa/c.py", "/usr/lib/python3.10/site-packages/torch/nn/functional.py(2): f",
    "/app/xDiT/xfuser/core/x.py(105): get", "/sgl-workspace/triton-custom/python/triton/runtime/jit.py(3): f",
    "torch/nn/modules/module.py(1501): _call_impl", "https://example.com/home/page", "./home/jane/x",
    "/<path:1>/train.py(12): forward", "/tmp/libkineto_activities_1074.json",
])
def test_path_near_misses(text):
    assert found(text) == []


def test_workspace_paths_become_relative():
    known = Known(workspace="/home/jane/proj")
    r = Redactor(known)
    assert r.redact("/home/jane/proj/model/net.py(3): forward") == "model/net.py(3): forward"
    assert r.redact("cwd /home/jane/proj") == "cwd ."
    assert r.redact("/home/jane/other/x.py") == "/<path:1>/x.py"
    assert r.redact("/home/jane/project2/x.py") == "/<path:2>/x.py"  # a sibling that shares the prefix


@pytest.mark.parametrize("text, host", [
    ("node twshared16453.15.atn5.facebook.com", "twshared16453.15.atn5.facebook.com"),
    ("ip-10-0-1-23 up", "ip-10-0-1-23"),
    ("MASTER 10.1.2.3:29500", "10.1.2.3"),
    ("api.openai.io", "api.openai.io"),
])
def test_hosts(text, host):
    assert found(text) == [("host", host)]


@pytest.mark.parametrize("text", ["torchvision.io", "nn.Module: Linear_0", "torch.nn.functional.linear", "cuda v12.1.0.1",
                                  "127.0.0.1", "aten.mm.default", "train.py", "libcudnn.so.8", "numpy.ndarray"])
def test_host_near_misses(text):
    assert found(text, strict=True) == []


def test_known_user_and_host_names_are_found_as_whole_words():
    known = Known(users=frozenset({"mojif"}), hosts=frozenset({"gpu-node-7"}))
    assert found("pyper:mojif:8 on gpu-node-7", known=known) == [("user", "mojif"), ("host", "gpu-node-7")]
    assert found("mojifx gpu-node-77", known=known) == []


@pytest.mark.parametrize("label, content", [
    ("generate What is the capital of France?", "generate What is the capital of France?"),
    ("prompt: tell me a joke", "tell me a joke"),
    ("## query=how do I sort a list ##", "how do I sort a list"),
    ("batch tensor([[0.1, 0.2], [0.3, 0.4]]) done", "tensor([[0.1, 0.2], [0.3, 0.4]])"),
    ("step for the quick brown fox jumps over", "step for the quick brown fox jumps over"),
])
def test_input_content(label, content):
    assert found(label, strict=True) == [("input", content)]
    # without the strict detectors, only the value of a content key (in any string)
    assert found(label) == ([("input", content)] if "=" in label or ": " in label else [])


@pytest.mark.parametrize("label", [
    "ProfilerStep#3", "ss:f0:73:next", "## forward:kt regroup as dict ##", "## all2all_data:kjt splits ##",
    "## all2all_data:lengths ##", "## metrics early stop ##", "Optimizer.step#SGD.step", "## encoder fp8 None ##",
    "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "step[DECODE bs=32]", "input:copy",
    "## Call CompiledFxGraph fp5r5pk7bndvtfxhvsvzndl5pa42kyv4kgpya5imdcl36x5bf6lh ##", "Torch-Compiled Region: 0/1",
    "<class '<torch_package_0>.dper3.modules.grouped_embedding._FeatureProcessorWrapper'>",
    "<built-in method values of collections.OrderedDict object at 0x7f0e8a76bbc0>",
    "void (anonymous namespace)::groupnorm_kernel<unsigned int, unsigned int, long, float, bool>(int)",
])
def test_input_near_misses(label):
    assert found(label, strict=True) == []


def test_same_secret_same_placeholder_and_names_of_work_untouched():
    r = Redactor(labels={"mail jane@acme.com", "for jane@acme.com"}, work_names={"aten::mm", "jane@acme.com kernel"})
    assert r.redact("mail jane@acme.com") == "mail <email:1>"
    assert r.redact("for jane@acme.com") == "for <email:1>"
    assert r.redact("to bob@acme.com") == "to <email:2>"
    assert r.redact("jane@acme.com kernel") is None  # a name of work is never changed
    assert r.redact("aten::mm") is None


def test_redaction_is_idempotent():
    texts = ["/home/jane/proj/train.py(12): forward", "mail jane@acme.com", "password=hunter2",
             "generate What is the capital of France?", "host db.corp.example.com"]
    once = would_redact(texts)
    assert all(o is not None for o in once)
    assert would_redact([o for o in once if o]) == [None] * len(texts)


def test_would_redact_for_an_editor_view():
    assert would_redact(["aten::mm", "ss:f0:12", "user jane@acme.com"]) == [None, None, "user <email:1>"]


def test_redact_text_applies_hits_right_to_left_safely():
    text = "a jane@acme.com b"
    hits = find_hits(text)
    assert redact_text(text, hits, lambda kind, value: f"<{kind}>") == "a <email> b"


@pytest.mark.parametrize("text, kind, secret", [
    ("call me at (415) 555-0132", "phone", "(415) 555-0132"),
    ("+44 20 7946 0958", "phone", "+44 20 7946 0958"),
    ("phone: 4155550132", "phone", "4155550132"),
    ("my SSN is 123-45-6789", "national-id", "123-45-6789"),
    ("NI number AB 12 34 56 C", "national-id", "AB 12 34 56 C"),
    ("passport no. X12345678", "national-id", "X12345678"),
    ("born 1970-01-01", "birth-date", "1970-01-01"),
    ("DOB: 03/12/1984", "birth-date", "03/12/1984"),
    ("date of birth 12 March 1984", "birth-date", "12 March 1984"),
    ("addr fe80::1ff:fe23:4567:890a", "host", "fe80::1ff:fe23:4567:890a"),
    ("[2001:db8:85a3::8a2e:370:7334]:29500", "host", "2001:db8:85a3::8a2e:370:7334"),
    ("tcp://192.168.1.20:23456", "host", "192.168.1.20"),
])
def test_personal_data_and_addresses(text, kind, secret):
    assert found(text, strict=True) == [(kind, secret)]


@pytest.mark.parametrize("text", [
    "2024-02-08 10:38:45", "1024 1024 4096", "step 123-45", "ninja==1.11.1.4", "cudnn 8.9.2.26", "c10::add",
    "12:30:45", "::1", "v1.2.3.4", "127.0.0.1:29500", "uuid 123e4567-e89b-12d3-a456-426614174000", "+1.5e-3",
    "batch 32 seq 2048 hidden 4096", "launched from torchvision.io",
])
def test_personal_data_and_address_near_misses(text):
    assert found(text, strict=True) == []


def test_overlapping_hits_are_replaced_whole():
    # the prompt and the address inside it are one span: no part of either is left
    r = Redactor(labels={"prompt: tell me about jane.doe@example.com please"})
    assert r.redact("prompt: tell me about jane.doe@example.com please") == "prompt: <input:1>"
    assert would_redact(["user input: My password is hunter2 and my SSN is 123-45-6789"]) == ["<input:1>"]


@pytest.mark.parametrize("text", [
    "jane.doe＠example.com", "jаne.doe@example.com",  # fullwidth @, Cyrillic а
    "hf_AbCdEfGhIjKlMnOp\u200bQrStUvWxYz0123456789",  # a zero-width space inside the token
    "ｈｆ_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "/һome/jane/x.py",
])
def test_lookalikes_are_read_as_what_they_imitate_and_replaced_whole(text):
    [hit] = find_hits(text, strict=True)
    assert text[hit.start:hit.end].replace("\u200b", "") in (text.replace("\u200b", ""), text[1:-5], text[1:11])
    assert "jane" not in (would_redact([text])[0] or text).lower() and "Ab" not in (would_redact([text])[0] or text)


def test_values_under_a_key_that_names_the_secret():
    from stepscope.redact.keys import key_role, keyed_value

    assert [key_role(k) for k in ("HF_TOKEN", "master_addr", "MasterAddr", "aws_secret_access_key", "prompt", "dob",
                                  "num_tokens", "max_token", "Concrete Inputs", "Input type", "host_port")] == [
        "token", "host", "host", "token", "input", "birth-date", None, None, None, None, None]
    assert keyed_value("host", "master_addr", "10.1.2.3") and not keyed_value("host", "master_addr", "localhost")
    assert not keyed_value("token", "eos_token", "</s>") and keyed_value("token", "HF_TOKEN", "hf_Ab1Cd2Ef3")
    assert not keyed_value("token", "api_key", "${API_KEY}") and not keyed_value("host", "host", "<host:1>")
    r = Redactor()
    assert r.redact_keyed("10.1.2.3", "host", "master_addr") == "<host:1>"
    assert r.redact_keyed("x7Kq9pZ2mW4vB8nR1tY6", "token", "AWS_SECRET_ACCESS_KEY") == "<token:1>"


def test_every_kind_is_known_to_the_panel_and_the_timeline_schema():
    import json
    import re
    from pathlib import Path

    from stepscope.redact.detect import KINDS

    repo = Path(__file__).resolve().parents[2]
    ts = (repo / "panel" / "src" / "redaction.ts").read_text()
    panel = json.loads(re.search(r"REDACT_KINDS = (\[[^\]]*\])", ts).group(1))
    schema = json.loads((repo / "server" / "stepscope" / "analysis" / "timeline.schema.json").read_text())
    assert sorted(panel) == sorted(KINDS) == sorted(schema["properties"]["redactable"]["additionalProperties"]["items"]["enum"])
