"""A SageMaker CreateTrainingJob request checked offline: botocore's ParamValidator (required
and unknown fields, types, minimums), the rest of botocore's model the service enforces
(maximums, patterns, enumerations) and limits the model lacks (28 days, S3 bucket names).

    found = problems(request, channels=("training",))   # [] when SageMaker would accept it
"""
from __future__ import annotations

import difflib
import functools
import re

OPERATION = "CreateTrainingJob"
# SageMaker's limits that the model leaves out, by the field's path in the request
LIMITS = {"StoppingCondition.MaxRuntimeInSeconds": (28 * 24 * 3600, "28 days")}
S3_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")   # S3's rule for bucket names
S3_BUCKET_RULE = ("valid bucket name: 3 to 63 lowercase letters, digits, dots or hyphens, beginning "
                  "and ending with a letter or digit (S3's rule, not in the model)")
# Java classes in the model's patterns that Python's re lacks (the tag shapes use them)
JAVA_CLASSES = {r"\p{Alnum}": "a-zA-Z0-9", r"\p{L}": r"\w", r"\p{N}": r"\w", r"\p{Z}": r"\s"}
SHOW_ALL = 12                        # an enumeration longer than this shows its closest values


class InvalidRequest(ValueError):
    """A request SageMaker would refuse; `problems` holds one line each."""

    def __init__(self, problems: list):
        self.problems = list(problems)
        super().__init__(f"the {OPERATION} request is not valid:\n  " + "\n  ".join(problems))


@functools.lru_cache(maxsize=1)
def service_model():
    """botocore's bundled model of the SageMaker API."""
    import botocore.session
    return botocore.session.get_session().get_service_model("sagemaker")


def model_version() -> str:
    import botocore
    return f"botocore {botocore.__version__}'s model of the SageMaker API ({service_model().api_version})"


def problems(request: dict, channels: tuple = ()) -> list:
    """What SageMaker would refuse in `request`, one line each; `channels` are input
    channels the job needs (read as SM_CHANNEL_<NAME> in the container)."""
    from botocore.validate import ParamValidator
    shape = _input_shape()
    report = ParamValidator().validate(request, shape)
    found = report.generate_report().splitlines() if report.has_errors() else []
    found += _limits(request, shape, "")
    given = [c.get("ChannelName") for c in request.get("InputDataConfig") or ()
             if isinstance(c, dict)]
    shown = ", ".join(map(str, given)) or "none"
    found += [f'Missing channel in InputDataConfig: "{name}", channels given: {shown}'
              for name in channels if name not in given]
    return found


def check(request: dict, channels: tuple = (), part: bool = False) -> dict:
    """`request`, or InvalidRequest listing its problems; part=True checks only the fields given."""
    found = _limits(request, _input_shape(), "") if part else problems(request, channels)
    if found:
        raise InvalidRequest(found)
    return request


def _input_shape():
    return service_model().operation_model(OPERATION).input_shape


def _limits(value, shape, name: str) -> list:
    """The model's constraints ParamValidator leaves to the service, and LIMITS (a wrong type
    is ParamValidator's to report)."""
    kind, meta = shape.type_name, shape.metadata
    found = []
    if kind == "structure" and isinstance(value, dict):
        for key, member in shape.members.items():
            if key in value:
                found += _limits(value[key], member, f"{name}.{key}" if name else key)
    elif kind in ("list", "map") and isinstance(value, (list, tuple, dict)):
        if len(value) > meta.get("max", len(value)):
            found.append(_invalid(name, f"{len(value)} entries", f"valid max length: {meta['max']}",
                                  "length"))
        if kind == "list":
            for i, item in enumerate(value):
                found += _limits(item, shape.member, f"{name}[{i}]")
        else:
            for key, item in value.items():
                found += _limits(key, shape.key, f"{name} (key: {key})")
                found += _limits(item, shape.value, f"{name}.{key}")
    elif kind == "string" and isinstance(value, str):
        found += _string_limits(value, shape, name)
    elif kind in ("integer", "long", "float", "double") and isinstance(value, (int, float)) \
            and not isinstance(value, bool):
        if value > meta.get("max", value):
            found.append(_invalid(name, value, f"valid max value: {meta['max']}"))
        limit, why = LIMITS.get(name, (value, ""))
        if value > limit:
            found.append(_invalid(name, value, f"valid max value: {limit} ({why}: SageMaker's "
                                  "limit, not in the model)"))
    return found


def _invalid(name: str, value, allowed: str, what: str = "value") -> str:
    """One problem, in ParamValidator's words."""
    return f"Invalid {what} for parameter {name}, value: {value}, {allowed}"


def _string_limits(value: str, shape, name: str) -> list:
    meta, enum = shape.metadata, shape.enum
    if len(value) > meta.get("max", len(value)):
        return [_invalid(name, repr(value), f"length: {len(value)}, valid max length: {meta['max']}",
                         "length")]
    if enum and value not in enum:
        return [_invalid(name, repr(value), "valid values: " + _allowed(value, enum, shape.name))]
    if (pattern := _pattern(meta.get("pattern"))) is not None and not pattern.fullmatch(value):
        return [_invalid(name, repr(value), f"valid pattern: {meta['pattern']}")]
    bucket = re.match(r"s3://([^/]*)", value) if shape.name == "S3Uri" else None
    if bucket and not (S3_BUCKET.fullmatch(bucket[1]) and ".." not in bucket[1]):
        return [_invalid(name, repr(value), S3_BUCKET_RULE)]
    return []


def _allowed(value: str, enum: list, kind: str) -> str:
    if len(enum) <= SHOW_ALL:
        return ", ".join(enum)
    closest = difflib.get_close_matches(value, enum, n=3, cutoff=0.5)
    return (f"one of {len(enum)} {kind} values"
            + (f", the closest: {', '.join(closest)}" if closest else f", e.g. {', '.join(enum[:3])}"))


@functools.lru_cache(maxsize=None)
def _pattern(text: str | None):
    """The model's pattern as a Python regex; None without one, or Java beyond JAVA_CLASSES."""
    if text is None:
        return None
    for java, python in JAVA_CLASSES.items():
        text = text.replace(java, python)
    try:
        return re.compile(text)
    except re.error:
        return None
