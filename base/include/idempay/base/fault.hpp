#pragma once

namespace idempay::fault {

/// Fault injection for crash tests. With IDEMPAY_CRASH_AT=NAME (or NAME:N) in the environment,
/// the process kills itself with SIGKILL the first (or N-th) time it reaches point NAME. Without
/// the variable this is one relaxed atomic load. Points: after-intent, after-acquirer,
/// after-result, during-callback, during-inbox-write.
void crash_point(const char* name);

}  // namespace idempay::fault
