// The actor system's scheduler: CAF's work-sharing one, with a clock that hears of an
// actor's end only when the actor has timeouts to cancel.
#pragma once

#include <caf/actor_system.hpp>

namespace idempay::actors {

/// A module factory for caf::actor_system_config::module_factories.
///
/// CAF tells its clock thread of every actor that terminates, so that the actor's timeouts
/// can be dropped: a push onto the clock's queue that wakes the clock thread and contends
/// for its lock, once per payment actor retired. Payment actors use delayed messages, which
/// that cancellation never touches, and no timeouts; on this machine each of those wake-ups
/// cost more than the work it carried. This scheduler's clock passes the cancellation on only
/// for actors that set a timeout (a receive, request or multi timeout) and are still known to
/// have one.
caf::actor_system::module* make_scheduler(caf::actor_system& system);

}  // namespace idempay::actors
