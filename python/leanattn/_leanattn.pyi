# Type stubs of the compiled module leanattn._leanattn (python/src). Private: the public API is
# the `leanattn` package, whose wrappers are the only callers. Array arguments are any object
# nanobind reads through DLPack or the buffer protocol (NumPy, PyTorch, CuPy).
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

__version__: str
backends: Tuple[str, ...]
MAX_WORKERS: int
MAX_QUERY_TOKENS: int

def simd_targets() -> List[str]: ...
def default_cpu_workers() -> int: ...
def _lend_openmp(parallel: int, thread_num: int, num_threads: int) -> None: ...

class Plan:
    @property
    def strategy(self) -> str: ...
    @property
    def order(self) -> str: ...
    @property
    def workers(self) -> int: ...
    @property
    def tile(self) -> int: ...
    @property
    def splits(self) -> int: ...
    @property
    def batch_invariant(self) -> bool: ...
    @property
    def chunk_tiles(self) -> int: ...
    @property
    def kv_heads(self) -> int: ...
    @property
    def group_size(self) -> int: ...
    @property
    def head_dim(self) -> int: ...
    @property
    def head_dim_v(self) -> int: ...
    @property
    def seq_lens(self) -> List[int]: ...
    @property
    def query_start_loc(self) -> List[int]: ...
    @property
    def num_slots(self) -> int: ...
    @property
    def total_tiles(self) -> int: ...
    @property
    def workspace_bytes(self) -> int: ...
    def segments(self, worker: int) -> List[Dict[str, Union[int, str]]]: ...
    def reductions(self) -> List[Dict[str, int]]: ...
    def worker_tiles(self) -> List[int]: ...
    def text(self) -> str: ...
    def picture(self, width: int) -> str: ...

class Problem:
    """A call's description (leanattn._decode.describe builds it): the arrays and keywords of
    leanattn.decode, whose docstring states their shapes and rules, with dtype hints ("" = the
    array's own) and 0 / -1 for None."""

    def __init__(
        self,
        q: Any,
        k_cache: Any,
        v_cache: Optional[Any] = ...,
        seq_lens: Optional[np.ndarray] = ...,
        block_table: Optional[Any] = ...,
        scale: float = ...,
        causal: bool = ...,
        window_left: int = ...,
        softcap: float = ...,
        head_dim_v: int = ...,
        sinks: Optional[Any] = ...,
        alibi_slopes: Optional[Any] = ...,
        k_scale: Optional[Any] = ...,
        v_scale: Optional[Any] = ...,
        kv_dtype: str = ...,
        v_dtype: str = ...,
        q_dtype: str = ...,
        query_start_loc: Optional[np.ndarray] = ...,
    ) -> None: ...
    @property
    def v_cache(self) -> Optional[Any]: ...
    @property
    def kv_dtype(self) -> str: ...
    @property
    def v_dtype(self) -> str: ...
    @property
    def sinks(self) -> Optional[Any]: ...
    @property
    def alibi_slopes(self) -> Optional[Any]: ...
    @property
    def k_scale(self) -> Optional[Any]: ...
    @property
    def v_scale(self) -> Optional[Any]: ...

def _decode(
    problem: Problem,
    out: Any,
    lse: Optional[Any],
    strategy: str = ...,
    workers: int = ...,
    tile: int = ...,
    plan: Optional[Plan] = ...,
    stream: int = ...,
) -> None: ...
def _decode_planned(
    q: Any,
    k_cache: Any,
    v_cache: Optional[Any],
    out: Any,
    lse: Optional[Any],
    plan: Plan,
    scale: float,
    workers: int,
    stream: int,
    causal: bool = ...,
    window_left: int = ...,
    softcap: float = ...,
) -> bool: ...
def _make_plan(
    seq_lens: np.ndarray,
    q_heads: int,
    kv_heads: int,
    head_dim: int,
    strategy: str,
    workers: int,
    tile: int,
    order: str,
    splits: int,
    batch_invariant: bool,
    chunk_tiles: int,
    q_len: int = ...,
    causal: bool = ...,
    window_left: int = ...,
    softcap: float = ...,
    sinks: bool = ...,
    alibi: bool = ...,
    backend: str = ...,
    head_dim_v: int = ...,
    query_start_loc: Optional[np.ndarray] = ...,
) -> Plan: ...
def _reference(problem: Problem) -> Tuple[np.ndarray, np.ndarray]: ...
def _merge_states(
    out_a: Any, lse_a: Any, out_b: Any, lse_b: Any, out: Any, lse: Any, out_dtype: str
) -> None: ...

class _Step:
    @property
    def workers(self) -> int: ...
    @property
    def planning(self) -> str: ...
    @property
    def tile(self) -> int: ...
    @property
    def batch(self) -> int: ...
    @property
    def value_dim(self) -> int: ...
    @property
    def max_seq_len(self) -> int: ...
    def plan(self, seq_lens: np.ndarray, stream: int) -> None: ...
    def check(self, stream: int) -> None: ...

def _step_new(
    problem: Problem, max_seq_len: int, planning: str, workers: int, tile: int
) -> _Step: ...
def _step_run(
    step: _Step,
    problem: Problem,
    seq_lens: Optional[Any],
    out: Any,
    lse: Optional[Any],
    stream: int,
) -> None: ...
