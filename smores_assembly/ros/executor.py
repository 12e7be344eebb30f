"""A single-threaded executor whose wake-ups cost little (issue 10).

rclpy's :class:`~rclpy.executors.SingleThreadedExecutor` rebuilds its wait set in Python at
every wake-up: it filters every entity of every node through its callback group, enters
each handle in an ``ExitStack``, builds a new ``WaitSet`` and, after the wait, looks every
entity up in the lists of ready pointers. Measured with ``SMORES_PROFILE_DIR`` on a lockstep
run of Task 1, that bookkeeping was 70-90 % of every node's CPU time (the fake hardware
wakes ~13 times per physics step: acks, commands, and the guard condition each callback
triggers).

:class:`LeanExecutor` is the same executor (it keeps rclpy's task and handler machinery,
so callbacks, coroutines, futures, services, clients and action servers behave as before)
with a wait set that is built once per set of entities and refilled per wait:

* the entity lists are rebuilt only when a node's entities change (compared by identity);
* the callback-group filter is applied only while tasks are in progress (otherwise no
  handler is pending and no mutually exclusive group is busy, so every entity may run; a
  single-threaded executor runs each handler as soon as it is yielded);
* handles are added without entering them (one thread: nothing is destroyed during the
  wait; a handle destroyed by an earlier callback of the same wake-up is skipped by
  rclpy's ``_take_*``, which catch ``InvalidHandle``);
* ready entities are found through a pointer -> entity map instead of a scan of every
  entity, and yielded in rclpy's order (waitables, then per node timers, subscriptions,
  guard conditions, clients, services);
* the timeout is the wait's own timeout (no timer entity per call);
* a coroutine task suspended on an rclpy ``Future`` that is still pending is not resumed
  (rclpy resumes every pending task at every wake-up, and its ``Future.__await__`` only
  polls: in one process the executive's goal coroutine was resumed ~7000 times per
  Task 1 run); it is resumed at the first wake-up after its future is done (the check
  comes before each wait, and a future is completed by a callback of this executor or,
  from another thread, seen at the latest when the wait times out);
* a subscription whose callback is a plain function is taken and called at once (rclpy
  makes a ``Task`` and a coroutine per message), likewise a timer whose callback is a
  plain function without a ``TimerInfo`` argument (rclpy also inspects its signature at
  every call), and handlers do not trigger the
  executor's guard condition (that wakes other threads of a multi-threaded executor; here
  it only made every callback cost a second, empty wake-up);
* a subscription marked *parked* (:func:`park`) is left out of the wait set: its messages
  stay in the reader until its owner takes them (:func:`take_all`), so a message that is
  only needed later (a lockstep participant's counted inputs, read at its turn) costs no
  wake-up of its own. Other executors ignore the mark (the messages then come through the
  callback, as before);
* services and QoS-event handlers (the *slow lane*) are added to at most one wait per
  :data:`SLOW_LANE_NS` (20 ms): a busy executor waits on its timers, subscriptions,
  guard conditions, clients and other waitables in between, a wait without them lasts no
  longer than until they are due, and an idle executor waits on everything.

``SMORES_EXECUTOR=single`` selects rclpy's executor instead (see
:func:`smores_assembly.ros.common.make_executor`).
"""
from __future__ import annotations

import functools
import inspect
import time
from typing import Any, Callable

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.event_handler import EventHandler
from rclpy.exceptions import InvalidHandle, TimerCancelledError
from rclpy.executors import (ConditionReachedException, ExternalShutdownException,
                             ShutdownException, SingleThreadedExecutor, TimeoutException,
                             TimeoutObject)
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.subscription import Subscription
from rclpy.task import Future, Task
from rclpy.timer import TimerInfo
from rclpy.waitable import NumberOfEntities

_TIMER, _SUB, _GUARD, _CLIENT, _SERVICE = range(5)

#: Longest time between two waits that include the *slow lane* [ns]: services and QoS-event
#: handlers (incompatible QoS, matched endpoints). Between them a busy executor waits on
#: the other entities only: each one is added to the wait set and checked after it at
#: every wake-up, and a lockstep run wakes a process several hundred times per wall second
#: (in one process: ~50 parameter services and ~30 event handlers of the seven nodes were
#: a third of the executor's own cost). A service request waits at most this long; an
#: event's status persists in its reader or writer until taken.
SLOW_LANE_NS = 20_000_000

#: bumped whenever a subscription is parked or unparked (the executors re-filter their
#: subscription handles then)
_parked_generation = 0


def park(sub, parked: bool = True) -> None:
    """Leave ``sub`` (an rclpy Subscription) out of :class:`LeanExecutor`'s wait sets
    (``parked``) or put it back. While parked its messages wait in the reader (up to its
    QoS depth) until :func:`take_all` takes them; no callback runs for them. Other
    executors ignore the mark."""
    global _parked_generation
    if getattr(sub, "_lean_parked", False) != parked:
        sub._lean_parked = parked
        _parked_generation += 1


def is_parked(sub) -> bool:
    """``sub`` is marked parked (see :func:`park`)."""
    return getattr(sub, "_lean_parked", False)


def take_all(sub, callback: Callable[[Any], None]) -> int:
    """Take every message waiting in ``sub``'s reader and pass each to ``callback`` (in the
    reader's order; raw bytes for a ``raw`` subscription); returns how many. A destroyed
    subscription gives 0."""
    n = 0
    handle, msg_type, raw = sub.handle, sub.msg_type, sub.raw
    while True:
        try:
            with handle:
                got = handle.take_message(msg_type, raw)
        except InvalidHandle:
            return n
        if got is None:
            return n
        n += 1
        callback(got[0])


class _Entities:
    """The wait set of one set of entities (see the module docstring)."""

    def __init__(self, nodes: list, key: tuple, executor: "LeanExecutor"):
        self.key = key
        # (entity, node) pairs
        self.subs: list[tuple[Any, Any]] = []
        self.timers: list[tuple[Any, Any]] = []
        self.clients: list[tuple[Any, Any]] = []
        self.services: list[tuple[Any, Any]] = []
        self.guards: list[tuple[Any, Any]] = []
        self.waitables: list[tuple[Any, Any]] = []
        #: every timer, subscription, guard condition, client and service in yield order
        self.order: list[tuple[int, Any, Any]] = []
        for node in nodes:
            for kind, entities, out in ((_TIMER, node.timers, self.timers),
                                        (_SUB, node.subscriptions, self.subs),
                                        (_GUARD, node.guards, self.guards),
                                        (_CLIENT, node.clients, self.clients),
                                        (_SERVICE, node.services, self.services)):
                for e in entities:
                    if e.callback_group is None:
                        continue   # never executable (rclpy's can_execute)
                    out.append((e, node))
                    self.order.append((kind, e, node))
            self.waitables += [(w, node) for w in node.waitables
                               if w.callback_group is not None]
        #: waitables that every wait adds (not the slow lane's QoS-event handlers)
        self.fast_waitables = [(w, node) for w, node in self.waitables
                               if not isinstance(w, EventHandler)]
        #: subscriptions whose callback is a plain function (called without a Task)
        self.plain = {id(e) for e, _ in self.subs
                      if not inspect.iscoroutinefunction(e.callback)}
        counts = NumberOfEntities(len(self.subs), len(self.guards) + 2, len(self.timers),
                                  len(self.clients), len(self.services))
        for w, _ in self.waitables:
            try:
                with w:
                    counts += w.get_num_entities()
            except InvalidHandle:
                pass
        # the handles (rclpy's property per access), added at every wait (subscriptions:
        # the ones not parked, re-filtered when the parked set changes)
        self.all_sub_handles = [(e, e.handle) for e, _ in self.subs]
        self.parked_generation = -1
        self.sub_handles: list = []
        self.active_subs()
        self.client_handles = [e.handle for e, _ in self.clients]
        self.service_handles = [e.handle for e, _ in self.services]
        self.timer_handles = [e.handle for e, _ in self.timers]
        #: timers whose callback is a plain function without a TimerInfo argument (called
        #: without a Task and without rclpy's signature inspection at every call)
        self.plain_timers = {id(e): e.callback for e, _ in self.timers
                             if _plain_timer_callback(e)}
        handle = executor.context.handle
        if handle is None:
            raise ExternalShutdownException()   # the context is shut down
        self.wait_set = _rclpy.WaitSet(
            counts.num_subscriptions, counts.num_guard_conditions, counts.num_timers,
            counts.num_clients, counts.num_services, counts.num_events, handle)
        self.by_pointer: dict[int, int] = {}
        for i, (_, e, _) in enumerate(self.order):
            try:
                self.by_pointer[e.handle.pointer] = i
            except InvalidHandle:
                pass

    def active_subs(self) -> list:
        """Handles of the subscriptions that are not parked (cached per generation)."""
        if self.parked_generation != _parked_generation:
            self.parked_generation = _parked_generation
            self.sub_handles = [h for e, h in self.all_sub_handles
                                if not getattr(e, "_lean_parked", False)]
        return self.sub_handles


_FUTURE_AWAIT = Future.__await__.__code__


def _waits_on_pending_future(task) -> bool:
    """``task`` is a coroutine task suspended in ``await fut`` on an rclpy ``Future`` that
    is still pending: resuming it would only poll that future (``Future.__await__`` yields
    until it is done) and suspend it again. False when unsure (then it is resumed, as
    rclpy does)."""
    obj = getattr(task, "_handler", None)
    while obj is not None:   # down the await chain (coroutines, then generators)
        nxt = getattr(obj, "cr_await", None)
        if nxt is None:
            nxt = getattr(obj, "gi_yieldfrom", None)
        if nxt is None:
            break
        obj = nxt
    if obj is None or getattr(obj, "gi_code", None) is not _FUTURE_AWAIT:
        return False
    frame = obj.gi_frame
    fut = frame.f_locals.get("self") if frame is not None else None
    return isinstance(fut, Future) and not fut.done() and not fut.cancelled()


def _plain_timer_callback(tmr) -> bool:
    """``tmr``'s callback is a plain function that takes no :class:`TimerInfo` (rclpy
    inspects the signature at every call: a user may swap the callback; a timer whose
    callback changes is not called plainly, see :class:`_PlainTimer`)."""
    cb = tmr.callback
    if cb is None or inspect.iscoroutinefunction(cb):
        return False
    try:
        params = inspect.signature(cb).parameters.values()
    except (TypeError, ValueError):
        return False
    return not any(p.annotation is TimerInfo for p in params)


class _PlainTimer:
    """The handler of a ready timer with a plain callback (see :func:`_plain_timer_callback`):
    reset the timer and call the callback now, inside its callback group, without a Task.
    A callback swapped since the entity lists were made goes through rclpy's path."""

    __slots__ = ("tmr", "callback", "exc", "fallback")

    def __init__(self, tmr, callback, fallback):
        self.tmr, self.callback, self.fallback = tmr, callback, fallback
        self.exc: BaseException | None = None

    def __call__(self) -> None:
        tmr = self.tmr
        if tmr.callback is not self.callback:   # swapped: rclpy's handler inspects it
            handler = self.fallback()
            handler()
            self.exc = handler.exception()
            return
        group = tmr.callback_group
        if not group.beginning_execution(tmr):
            return
        try:
            try:
                with tmr.handle:
                    tmr.handle.call_timer()
            except (InvalidHandle, TimerCancelledError):
                return
            tmr.callback()
        except Exception as exc:  # noqa: BLE001 - raised by spin_once, as rclpy's Task
            self.exc = exc
        finally:
            group.ending_execution(tmr)

    def exception(self) -> BaseException | None:
        return self.exc

    def result(self) -> None:
        if self.exc is not None:
            raise self.exc


class _PlainCall:
    """The handler of a ready subscription with a plain callback: take the message and call
    the callback now, inside its callback group (what rclpy's Task would do, without the
    Task). Has the part of the Task interface that ``spin_once`` uses."""

    __slots__ = ("sub", "exc")

    def __init__(self, sub):
        self.sub = sub
        self.exc: BaseException | None = None

    def __call__(self) -> None:
        sub = self.sub
        group = sub.callback_group
        if not group.beginning_execution(sub):
            return
        try:
            try:
                with sub.handle:
                    info = sub.handle.take_message(sub.msg_type, sub.raw)
            except InvalidHandle:   # destroyed by an earlier callback of this wake-up
                return
            if info is None:
                return
            if sub._callback_type is Subscription.CallbackType.MessageOnly:
                sub.callback(info[0])
            else:
                sub.callback(*info)
        except Exception as exc:  # noqa: BLE001 - raised by spin_once, as rclpy's Task
            self.exc = exc
        finally:
            group.ending_execution(sub)

    def exception(self) -> BaseException | None:
        return self.exc

    def result(self) -> None:
        if self.exc is not None:
            raise self.exc


class LeanExecutor(SingleThreadedExecutor):
    """rclpy's single-threaded executor with a cached wait set (see the module docstring).

    Same interface and callback semantics as
    :class:`~rclpy.executors.SingleThreadedExecutor`.
    """

    def __init__(self, *, context=None) -> None:
        super().__init__(context=context)
        self._lean: _Entities | None = None
        self._dirty = True
        self._last_full_ns = 0   # last wait with the slow lane [monotonic ns]

    # a node calls wake() whenever it creates or destroys an entity: only then can the
    # entity lists have changed
    def wake(self) -> None:
        self._dirty = True
        super().wake()

    def add_node(self, node) -> bool:
        self._dirty = True
        return super().add_node(node)

    def remove_node(self, node) -> None:
        self._dirty = True
        super().remove_node(node)

    def _make_handler(self, entity, node, take_from_wait_list):
        """rclpy's handler (a Task running the entity's callback in its group) without
        triggering the guard condition after the take and after the callback: with one
        thread the next wait set is built after the handler ran anyway."""
        entity._executor_event = True
        guard = self._guard

        async def handler(entity, is_shutdown, work_tracker) -> None:
            if is_shutdown or entity.callback_group is not None and \
                    not entity.callback_group.beginning_execution(entity):
                entity._executor_event = False
                guard.trigger()   # not run now: wait for it again
                return
            with work_tracker:
                call_coroutine = take_from_wait_list(entity)
                entity._executor_event = False
                try:
                    if call_coroutine is not None:
                        await call_coroutine()
                finally:
                    if entity.callback_group:
                        entity.callback_group.ending_execution(entity)
        task: Task[None] = Task(handler, (entity, self._is_shutdown, self._work_tracker),
                                executor=self)
        with self._tasks_lock:
            self._tasks.append((task, entity, node))
        return task

    @staticmethod
    def _key(nodes: list) -> tuple:
        return tuple((tuple(n.timers), tuple(n.subscriptions), tuple(n.guards),
                      tuple(n.clients), tuple(n.services), tuple(n.waitables))
                     for n in nodes)

    def _excluded(self, tasks: list) -> tuple[set, set]:
        """Entities that may not be waited on now: a handler made but not yet taken
        (``_executor_event``) and every entity of a busy non-reentrant callback group."""
        flagged, busy = set(), set()
        for _task, e, _node in tasks:
            if e is None:
                continue
            if e._executor_event:
                flagged.add(id(e))
            cg = e.callback_group
            if (cg is not None and not isinstance(cg, ReentrantCallbackGroup)
                    and not cg.can_execute(e)):
                busy.add(id(cg))
        return flagged, busy

    def _wait_for_ready_callbacks(  # noqa: C901 - one loop, as rclpy's
            self, timeout_sec: float | TimeoutObject | None = None, nodes: list | None = None,
            condition: Callable[[], bool] = lambda: False):
        if isinstance(timeout_sec, TimeoutObject):
            timeout_sec = timeout_sec.timeout
        timeout_ns = -1 if timeout_sec is None or timeout_sec < 0 else int(timeout_sec * 1e9)
        deadline = None if timeout_ns < 0 else time.monotonic_ns() + timeout_ns
        yielded_work = False
        while not yielded_work and not self._is_shutdown and not condition():
            nodes_to_use = self.get_nodes() if nodes is None else nodes
            with self._tasks_lock:
                tasks = list(self._tasks)
            if tasks:
                for task, entity, node in tasks:
                    if (not task.executing() and not task.done()
                            and (node is None or node in nodes_to_use)
                            and not _waits_on_pending_future(task)):
                        yielded_work = True
                        yield task, entity, node
                with self._tasks_lock:
                    self._tasks = [t for t in self._tasks
                                   if not t[0].done() and not t[0].cancelled()]
                    tasks = list(self._tasks)

            ent = self._lean
            if ent is None or self._dirty or nodes is not None:
                self._dirty = False
                key = self._key(nodes_to_use)
                if ent is None or ent.key != key:
                    ent = self._lean = _Entities(nodes_to_use, key, self)
            flagged, busy = self._excluded(tasks) if tasks else ((), ())

            def ok(e) -> bool:
                return id(e) not in flagged and id(e.callback_group) not in busy

            # the slow lane (services, QoS-event handlers) at most every SLOW_LANE_NS, and
            # at once on a non-blocking poll
            now_ns = time.monotonic_ns()
            full = timeout_ns == 0 or now_ns - self._last_full_ns >= SLOW_LANE_NS
            if full:
                self._last_full_ns = now_ns
            ws = ent.wait_set
            ws.clear_entities()
            strict = bool(flagged or busy)
            try:
                if strict:
                    for e, _ in ent.subs:
                        if ok(e) and not getattr(e, "_lean_parked", False):
                            ws.add_subscription(e.handle)
                    for e, _ in ent.clients:
                        if ok(e):
                            ws.add_client(e.handle)
                    for e, _ in (ent.services if full else ()):
                        if ok(e):
                            ws.add_service(e.handle)
                    for e, _ in ent.timers:
                        if ok(e):
                            ws.add_timer(e.handle)
                else:
                    for h in ent.active_subs():
                        ws.add_subscription(h)
                    for h in ent.client_handles:
                        ws.add_client(h)
                    for h in (ent.service_handles if full else ()):
                        ws.add_service(h)
                    for h in ent.timer_handles:
                        ws.add_timer(h)
                guards = [g for g, _ in ent.guards if not strict or ok(g)]
                for g in guards:
                    if g._executor_triggered:   # triggered but not handled: again
                        g.trigger()
                    ws.add_guard_condition(g.handle)
                own = [g for g in (self._guard, self._sigint_gc) if g]
                for g in own:
                    ws.add_guard_condition(g.handle)
                candidates = ent.waitables if full else ent.fast_waitables
                waitables = [w for w, _ in candidates if not strict or ok(w)]
                for w in waitables:
                    w.add_to_wait_set(ws)
            except InvalidHandle:
                # an entity destroyed since the lists were made: rebuild them
                self._lean = None
                continue

            wait_ns = -1 if deadline is None else max(0, deadline - time.monotonic_ns())
            if not full:   # without the slow lane: no longer than until it is due
                due_ns = max(0, self._last_full_ns + SLOW_LANE_NS - time.monotonic_ns())
                wait_ns = due_ns if wait_ns < 0 else min(wait_ns, due_ns)
            ws.wait(wait_ns)
            if self._is_shutdown:
                raise ShutdownException()
            if not self._context.ok():
                raise ExternalShutdownException()

            ready = []
            for what in ("subscription", "timer", "client", "service", "guard_condition"):
                for ptr in ws.get_ready_entities(what):
                    i = ent.by_pointer.get(ptr)
                    if i is not None:
                        ready.append(i)
            ready.sort()
            # only the waitables added to this wait (an event handler's index is that of
            # its last addition)
            if strict:
                waiting = {id(w) for w in waitables}
                ready_waitables = [(w, node) for w, node in candidates
                                   if id(w) in waiting and w.is_ready(ws)]
            else:
                ready_waitables = [(w, node) for w, node in candidates if w.is_ready(ws)]
            guard_ptrs = set(ws.get_ready_entities("guard_condition"))
            for g in guards:
                if g.handle.pointer in guard_ptrs:
                    g._executor_triggered = True

            for w, node in ready_waitables:
                if w.callback_group.can_execute(w):
                    handler = self._make_handler(w, node, self._take_waitable)
                    yielded_work = True
                    yield handler, w, node

            for i in ready:
                kind, e, node = ent.order[i]
                take: Callable[[Any], Any]
                try:
                    if kind == _TIMER:
                        if not e.handle.is_timer_ready():
                            continue   # rcl's cancelled-timer issue (as rclpy)
                        take = self._take_timer
                    elif kind == _SUB:
                        take = self._take_subscription
                    elif kind == _GUARD:
                        if not e._executor_triggered:
                            continue
                        take = self._take_guard_condition
                    elif kind == _CLIENT:
                        take = self._take_client
                    else:
                        take = self._take_service
                except InvalidHandle:
                    continue   # destroyed by an earlier callback of this wake-up
                if e.callback_group.can_execute(e):
                    if kind == _SUB and id(e) in ent.plain:
                        handler = _PlainCall(e)
                    elif kind == _TIMER and id(e) in ent.plain_timers:
                        handler = _PlainTimer(e, ent.plain_timers[id(e)], functools.partial(
                            self._make_handler, e, node, take))
                    else:
                        handler = self._make_handler(e, node, take)
                    yielded_work = True
                    yield handler, e, node

            if timeout_ns == 0 or (deadline is not None and time.monotonic_ns() >= deadline):
                raise TimeoutException()
        if self._is_shutdown:
            raise ShutdownException()
        if condition():
            raise ConditionReachedException()
