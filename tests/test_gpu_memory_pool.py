"""The GPU caching allocator's block pool, on a fake driver (it needs no GPU: it is bookkeeping)."""
import pytest

from tfjupyter.kernels.cuda.memory import BlockPool


class FakeDriver:
    def __init__(self):
        self.next = 1 << 20
        self.live = {}
        self.calls = 0

    def alloc(self, n):
        self.calls += 1
        address, self.next = self.next, self.next + n + (1 << 20)
        self.live[address] = n
        return address

    def free(self, address):
        del self.live[address]


def pool(limit=64 << 20, growth=True):
    driver = FakeDriver()
    return BlockPool(driver.alloc, driver.free, limit, growth), driver


def test_blocks_are_aligned_disjoint_and_reused_without_new_driver_calls():
    p, driver = pool()
    a, b, c = p.take(1000), p.take(1), p.take(5000)
    assert len({a, b, c}) == 3 and all(x % 256 == 0 for x in (a, b, c))
    spans = sorted([(a, 1024), (b, 256), (c, 5120)])
    assert all(s + n <= t for (s, n), (t, _) in zip(spans, spans[1:]))
    calls = driver.calls
    p.give(b)
    assert p.take(200) == b  # best fit: the freed 256-byte block
    for _ in range(100):  # a step's allocate/free cycle costs no driver call
        x = p.take(4096)
        p.give(x)
    assert driver.calls == calls


def test_neighbours_coalesce_so_a_big_block_fits_again():
    p, driver = pool(limit=2 << 20, growth=False)
    blocks = [p.take(256 << 10) for _ in range(8)]  # the whole 2 MiB region
    with pytest.raises(MemoryError, match="out of memory"):
        p.take(1)
    for b in blocks[::2] + blocks[1::2]:
        p.give(b)
    assert p.in_use == 0
    assert p.take(2 << 20) == blocks[0]
    assert driver.calls == 1


def test_without_growth_the_limit_is_reserved_at_once():
    p, driver = pool(limit=8 << 20, growth=False)
    p.take(100)
    assert p.reserved == 8 << 20 and driver.calls == 1


def test_growth_doubles_regions_up_to_the_limit_then_fails_clearly():
    p, driver = pool(limit=10 << 20, growth=True)
    p.take(1 << 20)
    assert p.reserved == 2 << 20
    p.take(2 << 20)  # no room left in region 1: region 2 is twice as big
    assert p.reserved == 6 << 20
    p.take(3 << 20)
    assert p.reserved == 10 << 20
    with pytest.raises(MemoryError, match=r"cannot allocate 4194304 bytes.*per_process_gpu_memory_fraction"):
        p.take(4 << 20)


def test_double_free_is_an_error_and_empty_regions_go_back_to_the_driver():
    p, driver = pool()
    a = p.take(10)
    p.give(a)
    with pytest.raises(RuntimeError, match="freed twice"):
        p.give(a)
    assert p.release_cached() == 2 << 20
    assert driver.live == {} and p.reserved == 0
    assert p.stats()["peak_in_use"] == 256


@pytest.fixture
def numba_manager(monkeypatch):
    """The Numba EMM plugin over a fake driver (no GPU needed: Numba's pointer bookkeeping is
    real, cudaMalloc/cudaFree are not)."""
    drv = pytest.importorskip("numba.cuda.cudadrv.driver")
    binding = pytest.importorskip("cuda.bindings.driver")
    from tfjupyter.kernels.cuda import memory
    regions = iter(range(1 << 40, 1 << 41, 1 << 32))
    # Through the instance dict: reading a missing attribute would initialize the driver.
    fake = {"cuMemAlloc": lambda n: binding.CUdeviceptr(next(regions)),
            "cuMemGetInfo": lambda: (1 << 30, 1 << 30), "cuMemFree": lambda p: None}
    for name, fn in fake.items():
        monkeypatch.setitem(vars(drv.driver), name, fn)
    monkeypatch.setattr(memory, "_pools", {})

    class Device:
        id = 0

    class Context:
        device = Device()
    context = Context()  # the manager holds a weak proxy to it
    manager = memory._manager_class()(context=context)
    manager.initialize()
    yield manager, lambda: memory._pools[0]


def test_numba_pointers_return_their_block_when_the_last_view_dies(numba_manager):
    import gc
    manager, pool = numba_manager
    a = manager.memalloc(1000)
    assert pool().in_use == 1024
    view = a.view(256, 512)
    del a
    gc.collect()
    assert pool().in_use == 1024  # the view keeps the block
    del view
    gc.collect()
    assert pool().in_use == 0


def test_numba_reinitializing_the_manager_keeps_live_blocks(numba_manager):
    import gc
    manager, pool = numba_manager
    b = manager.memalloc(1000)
    manager.initialize()  # Numba calls it on every context push
    gc.collect()
    assert pool().in_use == 1024
    c = manager.memalloc(1000)
    assert int(c.device_pointer) != int(b.device_pointer)
    assert b.size == 1000
