# SPDX-License-Identifier: Apache-2.0
"""Point-to-point messages between pipeline ranks: the one wire format and tag space of zbkit's
executor (activations and input gradients) and of post-validation (gradient states), the peer
inbox, and bounded waits.

Tag space (one per process group, shared by both): a data message of direction d (ACT, GRAD)
from stage s for microbatch mb has header tag ``((d * n + s) * m + mb) << 1`` and payload tag one
more (n stages, m microbatches), all below 4·n·m; post-validation owns the two highest tags,
TAG_PARTIAL and TAG_GLOBAL. `data_tags_fit` keeps the data tags below them.

Data messages: an int64 header [DATA_MAGIC, schedule fingerprint, direction, stage, microbatch,
dtype index, dims, shape padded to MAX_DIMS] then the payload. Receives from each peer are posted
in the order that peer sends (computed from its op list, so NCCL, which ignores tags, matches them
too): a header as soon as the previous payload is posted, the payload once the header is checked,
waited for just before the consuming op. Gradient-state messages: float64 [STATE_MAGIC, step,
sum of squares, found Inf/NaN].

Every wait is bounded; a dead, slow or mismatched peer raises the caller's error with one line.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
import torch.distributed as dist

from .schedule import Op, Schedule

ACT = 0  # activation, stage s -> s + 1
GRAD = 1  # input gradient, stage s -> s - 1

DATA_MAGIC = 0x7A626B74  # "zbkt"
STATE_MAGIC = 0x7A627076  # "zbpv"
MAX_DIMS = 8
HEADER_LEN = 7 + MAX_DIMS
DTYPES: Tuple[torch.dtype, ...] = (
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.int16,
    torch.int8,
    torch.uint8,
    torch.bool,
)

TAG_PARTIAL = 2**31 - 2  # post-validation: the partial gradient state, rank r -> r + 1
TAG_GLOBAL = 2**31 - 1  # post-validation: the global gradient state, rank r -> r - 1

Error = Callable[[str], Exception]


def data_tag(direction: int, stage: int, microbatch: int, part: int, n: int, m: int) -> int:
    """The tag of a data message's header (part 0) or payload (part 1)."""
    return (((direction * n + stage) * m + microbatch) << 1) | part


def data_tags_fit(num_stages: int, microbatches: int) -> bool:
    """Whether every data tag of a schedule stays below post-validation's tags."""
    return 4 * num_stages * microbatches <= TAG_PARTIAL


def one_line(e: BaseException) -> str:
    """The first line of an exception, without a backend's source location and boilerplate."""
    lines = str(e).strip().splitlines()
    text = lines[0] if lines else type(e).__name__
    text = re.sub(r"^\[[^\]]*\.(?:cc|cpp|h):\d+\]\s*", "", text)
    text = text.split(". This is typically caused", 1)[0]
    return text


def wait_bounded(work: Any, timeout_s: float, what: str, error: Error) -> None:
    """Waits at most `timeout_s` for `work`; a failure or the timeout raises error(one line)."""
    try:
        ok = work.wait(datetime.timedelta(seconds=timeout_s))
    except Exception as e:  # noqa: BLE001 - any backend failure becomes one clear line
        raise error(f"{what} failed: {one_line(e)}") from e
    if ok is False:
        raise error(f"{what} timed out after {timeout_s:g} s")


def wire_device(group: Any) -> torch.device:
    """Where message tensors live: the current GPU for NCCL, else the CPU."""
    if str(dist.get_backend(group)).lower() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def global_rank(group: Any, rank: int) -> int:
    """isend/irecv address peers by their rank in the default group."""
    return dist.get_global_rank(group, rank) if group is not None else rank


# ---------------------------------------------------------------------------------------------
# Activations and input gradients (the executor)


def message_of(op: Op, num_stages: int) -> Optional[Tuple[int, Tuple[int, int, int]]]:
    """(destination stage, (direction, producing stage, microbatch)) of what `op` sends, or
    None."""
    if op.kind == "F" and op.stage + 1 < num_stages:
        return op.stage + 1, (ACT, op.stage, op.microbatch)
    if op.kind in ("B", "BW") and op.stage > 0:
        return op.stage - 1, (GRAD, op.stage, op.microbatch)
    return None


@dataclass
class _Msg:
    """One expected incoming message."""

    direction: int
    stage: int  # the producing stage
    microbatch: int
    peer: int
    header: Optional[torch.Tensor] = None
    header_work: Any = None
    payload: Optional[torch.Tensor] = None
    payload_work: Any = None

    def text(self) -> str:
        what = "activation" if self.direction == ACT else "input gradient"
        return f"{what} of stage {self.stage} mb {self.microbatch} from peer rank {self.peer}"


class StageWire:
    """One rank's data messages for one schedule: sends, the peer inbox, and local hand-over
    between adjacent stages on the same rank (V placement). Errors go through `error`; `where`
    arguments name the op for the message ("zbkit executor rank 1 op 4 (F stage 1 mb 2)")."""

    def __init__(
        self, schedule: Schedule, rank: int, group: Any, fingerprint: int, timeout_s: float,
        device: torch.device, error: Error,
    ) -> None:  # fmt: skip
        self.rank, self.group, self.timeout_s, self.error = rank, group, timeout_s, error
        self.device = device
        self._fp = fingerprint
        self._n, self._m = schedule.num_stages, schedule.microbatches
        self._owner = {s: r for r, held in enumerate(schedule.stages) for s in held}
        self._schedule = schedule
        self._peer_global = [
            global_rank(group, r) if dist.is_available() and dist.is_initialized() else r
            for r in range(schedule.ranks)
        ]
        # Per peer, the messages it sends this rank, in the order it sends them.
        self._incoming: Dict[int, List[Tuple[int, int, int]]] = {}
        for peer, ops in enumerate(schedule.ops):
            if peer == rank:
                continue
            for op in ops:
                if self.sends_to_me(op):
                    self._incoming.setdefault(peer, []).append(message_of(op, self._n)[1])
        self._hold: Optional[Dict[int, int]] = None
        self._sends: List[Any] = []
        self._local: Dict[Tuple[int, int, int], torch.Tensor] = {}
        self._arrived: Dict[Tuple[int, int, int], _Msg] = {}
        self._posted: Dict[int, int] = {}
        self._queue: Dict[int, List[_Msg]] = {}  # nothing is posted before the first begin()

    def owner(self, stage: int) -> int:
        return self._owner[stage]

    def sends_to_me(self, op: Op) -> bool:
        sent = message_of(op, self._n)
        return sent is not None and self._owner[sent[0]] == self.rank

    def messages_before(self, peer: int, index: int) -> int:
        """How many of `peer`'s messages to this rank it sends before its op `index`."""
        return sum(1 for op in self._schedule.ops[peer][:index] if self.sends_to_me(op))

    # ---- attempt state -------------------------------------------------------------------

    def begin(self, hold: Optional[Dict[int, int]]) -> None:
        """Fresh per-attempt state, the first header from every peer posted. `hold`: per peer,
        post no receive past that many messages until `release` (post-validation)."""
        self._local = {}
        self._arrived = {}
        self._posted = {}
        self._queue = {
            peer: [_Msg(d, s, mb, peer) for (d, s, mb) in msgs]
            for peer, msgs in self._incoming.items()
        }
        self._hold = hold
        for peer in self._queue:
            self._post_next_header(peer)

    def release(self) -> None:
        """Lifts the hold: the held-back headers go out."""
        self._hold = None
        for peer in self._queue:
            self._post_next_header(peer)

    def drain(self, stale: Dict[int, int], where: str) -> None:
        """Receives and drops each peer's first `stale[peer]` messages (sent on speculative
        weights, before a failed validation)."""
        for peer, count in stale.items():
            while self._posted.get(peer, 0) < count:
                self._accept_next(peer, where)
            for msg in self._queue.get(peer, [])[:count]:
                key = (msg.direction, msg.stage, msg.microbatch)
                if self._arrived.get(key) is msg:
                    self._wait(msg.payload_work, f"{where}: draining the {msg.text()}")
                    del self._arrived[key]

    # ---- sending ---------------------------------------------------------------------------

    def send(self, where: str, op: Op, direction: int, tensor: torch.Tensor, dst: int) -> None:
        """Sends what `op` produced towards stage `dst` (locally when this rank holds it)."""
        if self._owner[dst] == self.rank:
            self._local[(direction, op.stage, op.microbatch)] = tensor.detach()
            return
        peer = self._owner[dst]
        t = tensor.detach().to(self.device).contiguous()
        if t.dim() > MAX_DIMS or t.dtype not in DTYPES:
            raise self.error(
                f"{where}: cannot send a {t.dim()}-d {t.dtype} tensor (at most {MAX_DIMS} dims "
                f"of {len(DTYPES)} dtypes)"
            )
        head = [DATA_MAGIC, self._fp, direction, op.stage, op.microbatch]
        head += [DTYPES.index(t.dtype), t.dim()] + list(t.shape) + [0] * (MAX_DIMS - t.dim())
        header = torch.tensor(head, dtype=torch.int64, device=self.device)
        try:
            tag = data_tag(direction, op.stage, op.microbatch, 0, self._n, self._m)
            w1 = dist.isend(header, self._peer_global[peer], group=self.group, tag=tag)
            w2 = dist.isend(t, self._peer_global[peer], group=self.group, tag=tag + 1)
        except Exception as e:  # noqa: BLE001 - any backend failure becomes one clear line
            raise self.error(f"{where}: send to peer rank {peer} failed: {one_line(e)}") from e
        self._sends.append((where, peer, header, t, w1, w2))

    def reap(self) -> None:
        """Drops completed sends so their buffers are freed early."""
        self._sends = [s for s in self._sends if not (s[4].is_completed() and s[5].is_completed())]

    def finish_sends(self) -> None:
        """Waits (bounded) for every send of the step."""
        try:
            for where, peer, _h, _t, w1, w2 in self._sends:
                self._wait(w1, f"{where}: send to peer rank {peer}")
                self._wait(w2, f"{where}: send to peer rank {peer}")
        finally:
            self._sends = []

    def abandon_sends(self) -> None:
        self._sends = []

    # ---- receiving -------------------------------------------------------------------------

    def receive(self, where: str, microbatch: int, direction: int, src: int) -> torch.Tensor:
        """The tensor stage `src` sent for `microbatch`; waited for here, bounded."""
        key = (direction, src, microbatch)
        if self._owner[src] == self.rank:
            try:
                return self._local.pop(key)
            except KeyError:
                what = "activation" if direction == ACT else "gradient"
                raise self.error(
                    f"{where}: stage {src} on this rank has not produced its {what} yet "
                    f"(schedule order)"
                ) from None
        peer = self._owner[src]
        # Drain this peer's messages in its send order up to the one needed.
        while key not in self._arrived:
            self._accept_next(peer, where)
        msg = self._arrived.pop(key)
        self._wait(msg.payload_work, f"{where}: waiting for the {msg.text()}")
        return msg.payload

    def _wait(self, work: Any, what: str) -> None:
        wait_bounded(work, self.timeout_s, what, self.error)

    def _irecv(self, tensor: torch.Tensor, peer: int, msg: _Msg, part: int) -> Any:
        tag = data_tag(msg.direction, msg.stage, msg.microbatch, part, self._n, self._m)
        return dist.irecv(tensor, self._peer_global[peer], group=self.group, tag=tag)

    def _post_next_header(self, peer: int) -> None:
        queue = self._queue.get(peer)
        idx = self._posted.get(peer, 0)
        if not queue or idx >= len(queue):
            return
        if self._hold is not None and idx >= self._hold.get(peer, 0):
            return  # until validated, only what a restart would drain
        msg = queue[idx]
        if msg.header_work is not None:
            return
        msg.header = torch.empty(HEADER_LEN, dtype=torch.int64, device=self.device)
        msg.header_work = self._irecv(msg.header, peer, msg, 0)

    def _accept_next(self, peer: int, where: str) -> None:
        """Waits for the header of `peer`'s next message, checks it and posts its payload."""
        queue = self._queue[peer]
        idx = self._posted.get(peer, 0)
        if idx >= len(queue):
            raise self.error(f"{where}: peer rank {peer} sends nothing more this step")
        msg = queue[idx]
        self._post_next_header(peer)
        self._wait(msg.header_work, f"{where}: waiting for the {msg.text()}")
        h = msg.header.tolist()
        got = (h[2], h[3], h[4])
        if h[0] != DATA_MAGIC or h[1] != self._fp:
            raise self.error(
                f"{where}: peer rank {peer} runs a different schedule (fingerprint mismatch on "
                f"the {msg.text()})"
            )
        if got != (msg.direction, msg.stage, msg.microbatch):
            raise self.error(
                f"{where}: peer rank {peer} sent {got} where {msg.text()} was expected"
            )
        if not 0 <= h[5] < len(DTYPES) or not 0 <= h[6] <= MAX_DIMS:
            raise self.error(
                f"{where}: peer rank {peer} sent a corrupt header for the {msg.text()}"
            )
        shape = h[7 : 7 + h[6]]
        msg.payload = torch.empty(shape, dtype=DTYPES[h[5]], device=self.device)
        msg.payload_work = self._irecv(msg.payload, peer, msg, 1)
        self._posted[peer] = idx + 1
        self._post_next_header(peer)
        self._arrived[(msg.direction, msg.stage, msg.microbatch)] = msg


# ---------------------------------------------------------------------------------------------
# Gradient states (post-validation)


class StateWire:
    """Rank-to-rank messages of a gradient state (sum of squares, found Inf/NaN) for a step."""

    def __init__(self, rank: int, group: Any, device: torch.device, timeout_s: float,
                 error: Error) -> None:  # fmt: skip
        self.rank, self.group, self.device, self.timeout_s = rank, group, device, timeout_s
        self.error = error

    def send(self, sum_sq: float, found_inf: bool, step: int, to: int, tag: int) -> Any:
        data = [STATE_MAGIC, step, sum_sq, float(found_inf)]
        t = torch.tensor(data, dtype=torch.float64, device=self.device)
        try:
            return (dist.isend(t, global_rank(self.group, to), group=self.group, tag=tag), t)
        except Exception as e:  # noqa: BLE001
            raise self.error(f"sending the gradient state to rank {to} failed: {e}") from e

    def post(self, source: int, tag: int) -> Tuple[Any, torch.Tensor]:
        t = torch.empty(4, dtype=torch.float64, device=self.device)
        return (dist.irecv(t, global_rank(self.group, source), group=self.group, tag=tag), t)

    def wait(self, posted: Tuple[Any, torch.Tensor], source: int, step: int) -> Tuple[float, bool]:
        work, t = posted
        what = f"the gradient state of step {step} from peer rank {source}"
        wait_bounded(work, self.timeout_s, f"waiting for {what}", self.error)
        magic, got_step, sum_sq, found_inf = t.tolist()
        if magic != STATE_MAGIC or got_step != step:
            raise self.error(f"rank {source} sent step {got_step:g} where {what} was expected")
        return sum_sq, found_inf != 0.0
