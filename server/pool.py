"""A pool of lint worker processes, spawned once and reused, driven from the asyncio event loop.

Why not ProcessPoolExecutor: a job that runs past its time limit must be stopped, and an executor can
neither kill one worker nor survive losing one. Here each worker is a process with a pipe; a job holds
one worker for its whole run; a worker that times out or dies is killed and replaced in the background
while the other workers go on serving.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from .worker import worker_main

log = logging.getLogger("thunder_lint.server")

_READY_TIMEOUT = 120.0  # seconds a fresh worker may take to import the engine and say "ready"


class PoolError(Exception):
    """A job could not be run; ``code`` names why (for the JSON error)."""

    code = "pool_error"


class PoolBusy(PoolError):
    code = "busy"


class JobTimeout(PoolError):
    code = "analysis_timeout"


class WorkerCrashed(PoolError):
    code = "worker_crashed"


class JobFailed(PoolError):
    code = "internal_error"


class _Worker:
    def __init__(self, ctx, memory_mb: int = 0) -> None:
        self.conn, child = ctx.Pipe(duplex=True)
        self.process = ctx.Process(target=worker_main, args=(child, memory_mb), name="thunder-lint-worker", daemon=True)
        self.process.start()
        child.close()
        if not self.conn.poll(_READY_TIMEOUT):
            self.kill()
            raise RuntimeError("a lint worker did not start in time")
        try:
            self.conn.recv()  # ("ready", pid)
        except EOFError:
            self.kill()
            raise RuntimeError(f"a lint worker exited while starting (exit code {self.process.exitcode})") from None

    def call(self, job, timeout: float):
        """Runs in a thread: send the job, wait at most ``timeout`` seconds for the reply."""
        try:
            self.conn.send(job)
            if not self.conn.poll(timeout):
                raise JobTimeout()
            status, payload = self.conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            raise WorkerCrashed() from None
        if status != "ok":
            raise JobFailed(payload)
        return payload

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        self.conn.close()

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except (OSError, ValueError):
            pass
        self.process.join(2)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(2)
        self.conn.close()


class WorkerPool:
    def __init__(self, size: int, *, max_waiting: int = 256, memory_mb: int = 0) -> None:
        if size < 1:
            raise ValueError("a worker pool needs at least one worker")
        self.size = size
        self.memory_mb = memory_mb
        self.max_waiting = max_waiting
        self.replaced = 0  # workers killed (timeout or crash) and started again
        self._ctx = multiprocessing.get_context("spawn")  # fork is unsafe in a process with threads
        self._workers: set[_Worker] = set()
        self._idle: asyncio.Queue[_Worker] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._threads = ThreadPoolExecutor(max_workers=size + 1, thread_name_prefix="thunder-lint-pool")
        self._waiting = 0
        self._closing = False
        self._lock = threading.Lock()

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._idle = asyncio.Queue()
        started = time.perf_counter()
        workers = await asyncio.gather(*(asyncio.to_thread(_Worker, self._ctx, self.memory_mb) for _ in range(self.size)))
        for w in workers:
            self._workers.add(w)
            self._idle.put_nowait(w)
        log.info("started %d lint worker(s) in %.2f s", self.size, time.perf_counter() - started)

    @property
    def alive(self) -> int:
        with self._lock:
            return sum(1 for w in self._workers if w.process.is_alive())

    @property
    def waiting(self) -> int:
        """Requests waiting for a free worker (the queue)."""
        return self._waiting

    @property
    def ready(self) -> bool:
        """Started, not closing, and at least one worker alive: a request sent now can be served."""
        return self._idle is not None and not self._closing and self.alive > 0

    @property
    def idle(self) -> int:
        return self._idle.qsize() if self._idle is not None else 0

    async def run(self, job, *, timeout: float, wait_timeout: float):
        """The job's result, or PoolBusy / JobTimeout / WorkerCrashed / JobFailed."""
        assert self._idle is not None, "start() the pool first"
        if self._waiting >= self.max_waiting:
            raise PoolBusy(f"{self._waiting} requests are already waiting for a worker")
        self._waiting += 1
        deadline = self._loop.time() + wait_timeout
        try:
            while True:
                try:
                    worker = await asyncio.wait_for(self._idle.get(), max(0.0, deadline - self._loop.time()))
                except TimeoutError:
                    raise PoolBusy(f"no worker became free within {wait_timeout:g} s") from None
                if worker.process.is_alive():
                    break
                # It died while idle (killed from outside, or it quit after a MemoryError): replace it.
                self._start_replacement(worker, "exited while idle")
        finally:
            self._waiting -= 1
        future = self._loop.run_in_executor(self._threads, worker.call, job, timeout)
        # Whatever happens to this request (even a cancelled one), the worker goes back or is replaced
        # only once its call has really finished.
        future.add_done_callback(lambda f: self._release(worker, f))
        return await asyncio.shield(future)

    def _release(self, worker: _Worker, future) -> None:
        error = None if future.cancelled() else future.exception()
        if error is None or isinstance(error, JobFailed):
            if not self._closing:
                self._idle.put_nowait(worker)
            return
        self._start_replacement(worker, "ran past its time limit" if isinstance(error, JobTimeout) else "died")

    def _start_replacement(self, worker: _Worker, reason: str) -> None:
        log.warning("a lint worker (pid %s) %s; replacing it", worker.process.pid, reason)
        threading.Thread(target=self._replace, args=(worker,), name="thunder-lint-respawn", daemon=True).start()

    def _replace(self, old: _Worker) -> None:
        old.kill()
        with self._lock:
            self._workers.discard(old)
        delay = 0.5
        while not self._closing:
            try:
                new = _Worker(self._ctx, self.memory_mb)
            except Exception as e:  # keep trying: a pool that silently shrinks to nothing serves no one
                log.error("could not start a replacement lint worker: %s; retrying in %.1f s", e, delay)
                time.sleep(delay)
                delay = min(delay * 2, 30.0)
                continue
            with self._lock:
                if self._closing:
                    new.stop()
                    return
                self._workers.add(new)
                self.replaced += 1
            self._loop.call_soon_threadsafe(self._idle.put_nowait, new)
            return

    async def close(self) -> None:
        self._closing = True
        with self._lock:
            workers = list(self._workers)
            self._workers.clear()
        await asyncio.gather(*(asyncio.to_thread(w.stop) for w in workers))
        self._threads.shutdown(wait=False, cancel_futures=True)
