"""The schema of a verification record (``verification/nccl_check.json``), in pydantic 2.

Strict: an integer field takes an int and a number field an int or a float, never a bool,
a string or null (``schema`` is the int 2, not 2.0); unknown keys are refused; texts have no
control character and no space at either end; rates and bandwidths are finite numbers as the
snippet prints them, with one decimal, so at least 0.1 (``1e-300`` would show as "0,0").
Beyond types, a record must be consistent with itself and with this checkout:

- one world: ``measured.world_size`` = ``gpu.count`` = ``torch_device_count`` = the number of
  rank lines, which are ranks 0..n-1 of that world, each with the checked sum n(n+1)/2, all on
  one host (``torchrun --nproc_per_node``), each on the GPU of its local rank (``cuda:<rank>``:
  a line of the CPU rehearsal says ``cpu``);
- the numbers are those the snippet prints (nccl-tests' definitions, doc/PERFORMANCE.md):
  algbw = all-reduces per second x bytes / 10^9, busbw = algbw x 2(n-1)/n, to the printed
  rounding; the summary is the slowest rank; busbw at most ``BUSBW_PLAUSIBLE_MAX_GB_PER_S``;
  one rank claims no busbw (nothing crosses a link: ``busbw_gb_per_s`` is null);
- a passing run: ``status`` "pass", ``failures`` empty, GPU tests passed with none failed,
  skipped or in error;
- ``blocks`` maps block titles to SHA-256 digests and holds ``snippet`` with
  ``snippet_sha256``;
- with the expectations passed as validation context (``Expected``): ``snippet`` is the
  block's name, ``blocks`` names exactly the blocks the GPU job hashes (``verify.record.BLOCKS``), ``versions.torch`` is the torch pinned in ``constraints.txt`` (local part
  such as ``+cu128`` aside), and ``utc`` is neither in the future (beyond ``CLOCK_SKEW``)
  nor older than ``Expected.max_age``.

``verify.record.check_record`` validates with it and turns the first error into one line
naming the record file.
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass
from typing import Annotated, Literal

from packaging.version import InvalidVersion, Version
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)

from verify.record_format import BUSBW_PLAUSIBLE_MAX_GB_PER_S, LINK_CLASSES, SCHEMA

CLOCK_SKEW = datetime.timedelta(minutes=5)
UTC_FORMAT = "%Y-%m-%dT%H:%M:%SZ"

Text = Annotated[
    str, StringConstraints(pattern=r"^[^\s\x00-\x1f\x7f-\x9f](?:[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f])?$")
]
VersionNumber = Annotated[str, StringConstraints(pattern=r"^\d+(?:\.\d+)+$")]
Count = Annotated[int, Field(ge=1)]
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
BlockTitle = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")]
Index = Annotated[int, Field(ge=0)]
Zero = Annotated[int, Field(ge=0, le=0)]


def _printed(value: float) -> float:
    if round(value, 1) != value:
        raise ValueError(f"{value!r} is not a figure the snippet prints (one decimal)")
    return value


Rate = Annotated[float, Field(ge=0.1, allow_inf_nan=False), AfterValidator(_printed)]
LinkClass = Literal[LINK_CLASSES]  # type: ignore[valid-type]  # the tuple of record_format, its one definition: mypy reads only literal values here


@dataclass(frozen=True)
class Expected:
    """What this checkout expects of a record: the block's name, the pinned torch, the time window."""

    snippet: str
    torch: str
    now: datetime.datetime
    max_age: datetime.timedelta
    blocks: tuple[str, ...] = ()


class Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


def _close(value: float, expected: float, what: str) -> None:
    """Printed numbers carry one decimal: allow that rounding (0.15) and 1 % of ``expected``."""
    if not math.isclose(value, expected, rel_tol=0.01, abs_tol=0.15):
        raise ValueError(f"{what} is {value:g}, but the other figures give {expected:.1f}")


class Gpu(Strict):
    model: Text
    count: Count
    memory_mib: Count
    driver: Text


class Links(Strict):
    pairs: dict[Annotated[str, StringConstraints(pattern=r"^\d+-\d+$")], LinkClass]
    classes: list[LinkClass]
    slowest: LinkClass | None

    @model_validator(mode="after")
    def _classes_summarise_pairs(self) -> Links:
        present = [c for c in LINK_CLASSES if c in self.pairs.values()]
        if self.classes != present or self.slowest != (present[-1] if present else None):
            raise ValueError(
                f"classes {self.classes} and slowest {self.slowest!r} do not summarise the pairs ({present})"
            )
        return self


class RankLine(Strict):
    rank: Index
    world: Count
    local_rank: Index
    device: Text
    host: Text
    allreduce_per_s: Rate
    algbw_gb_per_s: Rate
    busbw_gb_per_s: Rate | None
    checked_sum: Count


class Measured(Strict):
    world_size: Count
    size_bytes: Count
    allreduce_per_s: Rate
    algbw_gb_per_s: Rate
    busbw_gb_per_s: Annotated[Rate, Field(le=BUSBW_PLAUSIBLE_MAX_GB_PER_S)] | None
    ranks: list[RankLine]

    @model_validator(mode="after")
    def _one_consistent_world(self) -> Measured:
        n = self.world_size
        if [line.rank for line in self.ranks] != list(range(n)) or any(line.world != n for line in self.ranks):
            raise ValueError(
                f"ranks must be one line for each rank 0..{n - 1} of a world of {n}, "
                f"got ranks {[line.rank for line in self.ranks]}"
            )
        if any(line.checked_sum != n * (n + 1) // 2 for line in self.ranks):
            raise ValueError(f"a rank reports a checked sum other than {n * (n + 1) // 2}")
        for line in self.ranks:
            if (line.local_rank, line.device) != (line.rank, f"cuda:{line.rank}"):
                raise ValueError(
                    f"rank {line.rank} ran on {line.device} as local rank {line.local_rank}: "
                    f"one machine's ranks each on the GPU of its local rank (cuda:{line.rank})"
                )
        if len({line.host for line in self.ranks}) != 1:
            raise ValueError(
                f"the ranks ran on several hosts ({', '.join(sorted({line.host for line in self.ranks}))}): "
                "the check runs on one machine"
            )
        checked: list[tuple[str, Measured | RankLine]] = [("the summary", self)]
        for where, figures in [*checked, *((f"rank {line.rank}", line) for line in self.ranks)]:
            _close(figures.algbw_gb_per_s, figures.allreduce_per_s * self.size_bytes / 1e9, f"{where}: algbw_gb_per_s")
            if n == 1 and figures.busbw_gb_per_s is not None:
                raise ValueError(f"{where}: a busbw for one rank; nothing crosses a link (it must be null)")
            if n > 1:
                if figures.busbw_gb_per_s is None:
                    raise ValueError(f"{where}: no busbw for {n} ranks")
                _close(figures.busbw_gb_per_s, figures.algbw_gb_per_s * 2 * (n - 1) / n, f"{where}: busbw_gb_per_s")
        slowest = min(self.ranks, key=lambda line: line.allreduce_per_s)
        if (self.allreduce_per_s, self.algbw_gb_per_s, self.busbw_gb_per_s) != (
            slowest.allreduce_per_s,
            slowest.algbw_gb_per_s,
            slowest.busbw_gb_per_s,
        ):
            raise ValueError(f"the summary is not the slowest rank's figures (rank {slowest.rank})")
        return self


class Versions(Strict):
    torch: Text
    cuda: VersionNumber
    nccl: VersionNumber

    @field_validator("torch")
    @classmethod
    def _pinned_torch(cls, value: str, info: ValidationInfo) -> str:
        expected: Expected | None = info.context
        try:
            public = Version(value).public
        except InvalidVersion:
            raise ValueError(f"{value!r} is not a version") from None
        if expected is not None and public != Version(expected.torch).public:
            raise ValueError(f"torch {value} ran, constraints.txt pins torch=={expected.torch}")
        return value


class GpuTests(Strict):
    status: Literal["pass"]
    passed: Count
    failed: Zero
    skipped: Annotated[int, Field(ge=0, le=0, description="a skip counts as a failure")]
    errors: Zero


class Record(Strict):
    schema_: Annotated[int, Field(ge=SCHEMA, le=SCHEMA)] = Field(alias="schema")  # Literal[2] took 2.0
    fixture: bool
    note: Text | None = None
    snippet: Text
    snippet_sha256: Sha256
    blocks: dict[BlockTitle, Sha256]
    status: Literal["pass"]
    utc: Annotated[str, StringConstraints(pattern=r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")]
    runner: Text | None
    gpu: Gpu
    links: Links
    measured: Measured
    versions: Versions
    gpu_tests: GpuTests
    failures: Annotated[list[str], Field(max_length=0)]
    torch_device_count: Count

    @field_validator("snippet")
    @classmethod
    def _the_blocks_name(cls, value: str, info: ValidationInfo) -> str:
        expected: Expected | None = info.context
        if expected is not None and value != expected.snippet:
            raise ValueError(f"the record is of {value!r}, the pages' verified block is {expected.snippet!r}")
        return value

    @field_validator("blocks")
    @classmethod
    def _the_blocks_the_job_ran(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        expected: Expected | None = info.context
        if expected is not None and expected.blocks and set(value) != set(expected.blocks):
            missing, unknown = sorted(set(expected.blocks) - set(value)), sorted(set(value) - set(expected.blocks))
            raise ValueError(
                f"the blocks the GPU job hashes are {', '.join(expected.blocks)}"
                + (f"; missing {', '.join(missing)}" if missing else "")
                + (f"; not one of them: {', '.join(unknown)}" if unknown else "")
            )
        return value

    @field_validator("utc")
    @classmethod
    def _recent(cls, value: str, info: ValidationInfo) -> str:
        try:
            moment = datetime.datetime.strptime(value, UTC_FORMAT).replace(tzinfo=datetime.UTC)
        except ValueError:
            raise ValueError(f"{value!r} is not a date and time ({UTC_FORMAT})") from None
        expected: Expected | None = info.context
        if expected is not None:
            if moment > expected.now + CLOCK_SKEW:
                raise ValueError(f"{value} is in the future (now {expected.now:{UTC_FORMAT}})")
            if moment < expected.now - expected.max_age:
                raise ValueError(f"{value} is older than {expected.max_age.days} days; rerun `make gpu-check`")
        return value

    @model_validator(mode="after")
    def _one_machine(self) -> Record:
        counts = {
            "measured.world_size": self.measured.world_size,
            "gpu.count": self.gpu.count,
            "torch_device_count": self.torch_device_count,
        }
        if len(set(counts.values())) != 1:
            raise ValueError(
                "one run on every visible GPU needs "
                + " = ".join(counts)
                + f", got {', '.join(f'{k} {v}' for k, v in counts.items())}"
            )
        if self.blocks.get(self.snippet) != self.snippet_sha256:
            raise ValueError(f"blocks[{self.snippet!r}] is not snippet_sha256")
        n = self.gpu.count
        if set(self.links.pairs) != {f"{i}-{j}" for i in range(n) for j in range(i + 1, n)}:
            raise ValueError(f"links.pairs must name every pair of the {n} GPUs")
        return self
