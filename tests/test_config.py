import re

import pytest

from gpu_course.config import FIELDS, Experiment, Graph, check_gpus, parse_value, worded


def test_defaults_are_the_naive_rung():
    cfg = Experiment()
    assert (cfg.batch_size, cfg.num_workers, cfg.dtype, cfg.graph) == (64, 1, "float32", "eager")
    assert cfg.global_batch == 64 and cfg.scaled_lr == cfg.lr


@pytest.mark.parametrize("field, value, words", [
    ("batch_size", 0, ["batch_size", "0", ">= 1"]),
    ("num_workers", -1, ["num_workers", "-1", ">= 0"]),
    ("dtype", "float8", ["dtype", "float8", "float16"]),
    ("optimizer", "rmsprop", ["optimizer", "rmsprop", "lbsgd"]),
    ("lr_scheduler", "exp", ["lr_scheduler", "exp", "multifactor"]),
    ("model", "vgg", ["model", "vgg", "resnet20"]),
    ("graph", "jit", ["graph", "jit", "pytorch: eager, compile, cuda-graphs",
                      "gluon: imperative, hybridize, static-alloc"]),
    ("lr", 0.0, ["lr", "0.0"]),
    ("optimizer_params", (("momentum", 1.5),), ["momentum", "1.5", "[0, 1)"]),
    ("optimizer_params", {"wd": -1}, ["wd", "-1", ">= 0"]),
    ("epochs", 0, ["epochs", "0"]),
    ("mock", "gpu", ["mock", "gpu", "loader"]),
])
def test_bad_values_name_field_value_and_what_is_allowed(field, value, words):
    with pytest.raises(ValueError) as err:
        Experiment(**{field: value})
    for word in words:
        assert word in str(err.value)


@pytest.mark.parametrize("words, graph", [
    (("eager", "imperative", "EAGER"), Graph.EAGER),
    (("hybrid", "hybridize", "compile"), Graph.HYBRID),
    (("static", "static-alloc", "static_alloc", "cuda-graphs", "CUDA graphs"), Graph.STATIC),
])
def test_the_graph_is_asked_in_either_track_s_words_and_kept_in_one(words, graph):
    """Each track's attendee writes its own words; the record keeps the canonical one, so
    runs asked in either track's words, and old records, compare alike."""
    for engine in ("gluon", "pytorch"):
        for word in words:
            cfg = Experiment(engine=engine, graph=word)
            assert cfg.graph == graph.value and type(cfg.graph) is str
            assert Experiment.from_dict(cfg.to_dict()) == cfg
    assert worded("graph", graph.value, "pytorch") == graph.word("pytorch") == \
        {"eager": "eager", "hybrid": "compile", "static": "cuda-graphs"}[graph]
    assert worded("graph", graph.value, "gluon") == \
        {"eager": "imperative", "hybrid": "hybridize", "static": "static-alloc"}[graph]
    assert worded("dtype", "float16", "pytorch") == "float16"   # only the graph has words


def test_engine_specific_choices():
    with pytest.raises(ValueError, match="lbsgd"):
        Experiment(engine="gluon", optimizer="adamw")
    with pytest.raises(ValueError, match="optimizer='lbsgd'"):
        Experiment(engine="pytorch", optimizer="lbsgd")
    assert Experiment(engine="gluon", dtype="bfloat16").dtype == "bfloat16"   # on a CPU (AMP)
    assert Experiment(engine="pytorch", lr_scheduler="onecycle").lr_scheduler == "onecycle"


def test_multifactor_needs_increasing_steps():
    with pytest.raises(ValueError, match="lr_steps"):
        Experiment(lr_scheduler="multifactor")
    with pytest.raises(ValueError, match="increasing"):
        Experiment(lr_scheduler="multifactor", lr_steps=(4, 2), epochs=5)
    assert Experiment(lr_scheduler="multifactor", lr_steps=[2, 4], epochs=5).lr_steps == (2, 4)


def test_frozen_replace_and_round_trip():
    cfg = Experiment(batch_size=128, optimizer_params={"batch_scale": 4})
    with pytest.raises(Exception):
        cfg.batch_size = 3
    other = cfg.replace(num_workers=4)
    assert other.num_workers == 4 and cfg.num_workers == 1
    with pytest.raises(ValueError, match="batch_size"):
        cfg.replace(batch_size=-2)
    with pytest.raises(ValueError, match="unknown Experiment field"):
        cfg.replace(batchsize=3)
    assert Experiment.from_dict(cfg.to_dict()) == cfg
    assert dict(cfg.optimizer_params) == {"batch_scale": 4}


def test_an_unknown_field_is_refused_by_name_and_a_retired_one_says_where_it_went():
    with pytest.raises(ValueError, match=r"unknown Experiment field\(s\): epoch; allowed: "
                                         r"name, engine, .*epochs"):
        Experiment(epoch=2)
    with pytest.raises(ValueError, match=r"momentum \(retired; now optimizer_params"):
        Experiment(momentum=0.5)
    with pytest.raises(ValueError, match=r"graph_steps \(retired\)"):
        Experiment().replace(graph_steps=2)


def test_momentum_and_weight_decay_are_optimizer_params_with_the_course_s_defaults():
    assert (Experiment().momentum, Experiment().wd) == (0.9, 5e-4)
    cfg = Experiment(optimizer_params={"momentum": 0.8, "wd": 0.0})
    assert (cfg.momentum, cfg.wd) == (0.8, 0.0)


def test_an_old_record_s_config_with_retired_fields_still_loads():
    """A run.json of an earlier version carries fields since retired: they are left out;
    a key that never was a field is still refused."""
    old = {**Experiment(engine="pytorch", batch_size=128).to_dict(), "momentum": 0.9,
           "wd": 5e-4, "lr_factor": 0.1, "kvstore": "device", "skip_corrupt": False,
           "convolutions": "cudnn", "graphed_eval": False, "autotune": False,
           "graph_steps": 1}
    assert Experiment.from_dict(old) == Experiment(engine="pytorch", batch_size=128)
    with pytest.raises(ValueError, match="unknown Experiment field.*batchsize"):
        Experiment.from_dict({**old, "batchsize": 3})


def test_linear_lr_scaling():
    cfg = Experiment(batch_size=640, num_gpus=4, lr=0.1, lr_base_batch=256)
    assert cfg.global_batch == 2560
    assert cfg.scaled_lr == pytest.approx(1.0)


def test_check_gpus():
    assert check_gpus(1, 2) == ("gpu", 1, None)
    kind, n, notice = check_gpus(2, 0)
    assert (kind, n) == ("cpu", 2) and "No GPU found" in notice and "\n" not in notice
    with pytest.raises(ValueError, match=r"num_gpus=4 is too many here; allowed: 0\.\.2"):
        check_gpus(4, 2)
    assert check_gpus(0, 8) == ("cpu", 1, None)


def test_parse_value_types():
    assert parse_value("batch_size", "256") == 256
    assert parse_value("lr", "0.4") == 0.4
    assert parse_value("pin_memory", "true") is True
    assert parse_value("max_steps", "none") is None
    assert parse_value("lr_steps", "2,4") == (2, 4)
    assert parse_value("optimizer_params", "batch_scale=4,warmup_strategy=linear") == \
        (("batch_scale", 4), ("warmup_strategy", "linear"))
    with pytest.raises(ValueError, match="batch_size='many'"):
        parse_value("batch_size", "many")
    with pytest.raises(ValueError, match="unknown"):
        parse_value("nope", "1")
    assert "batch_size" in FIELDS


@pytest.mark.parametrize("value", [0, -2, 1.5, "2", True])
def test_threads_is_none_or_a_positive_integer(value):
    """The training process's intra-op threads: a bad count is refused with what is allowed."""
    with pytest.raises(ValueError, match=rf"threads={value!r} must be None or an integer >= 1"):
        Experiment(threads=value)
    assert Experiment().threads is None and Experiment(threads=3).threads == 3
    assert parse_value("threads", "none") is None and parse_value("threads", "2") == 2



@pytest.mark.parametrize("field", ["pin_memory", "persistent_workers", "data_on_gpu",
                                   "channels_last"])
def test_yes_no_fields_read_their_words_and_refuse_the_rest(field):
    base = dict(engine="pytorch")
    for word, value in (("false", False), ("No", False), ("0", False), (0, False),
                        ("true", True), ("YES", True), (1, True), (True, True)):
        assert getattr(Experiment(**base, **{field: word}), field) is value
    for bad in ("nope", "", 2, 0.5, None, [True]):
        with pytest.raises(ValueError, match=rf"{field}=.* must be True or False"):
            Experiment(**base, **{field: bad})


def test_a_monitor_interval_beyond_an_hour_is_refused_not_overflowed():
    with pytest.raises(ValueError, match=r"monitor_interval=1e\+300 must be in \(0, 3600\]"):
        Experiment(monitor_interval=1e300)
    assert Experiment(monitor_interval=3600).monitor_interval == 3600


@pytest.mark.parametrize("value", [123, 1.5, ["data"], "", "   "])
def test_a_data_dir_that_is_not_a_path_names_the_value_and_what_is_allowed(value):
    with pytest.raises(ValueError, match=rf"data_dir={re.escape(repr(value))} is not a folder; "
                                         r"allowed: None or a path"):
        Experiment(data_dir=value)


def test_a_data_dir_given_as_a_path_is_accepted(tmp_path):
    assert Experiment(data_dir=tmp_path).data_dir == tmp_path
