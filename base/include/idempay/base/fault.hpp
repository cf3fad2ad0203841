#pragma once

namespace idempay::fault {

/// Fault injection for crash tests. With IDEMPAY_CRASH_AT=NAME (or NAME:N) in the environment,
/// the process kills itself with SIGKILL the first (or N-th) time it reaches point NAME. Without
/// the variable this is one relaxed atomic load. Points: after-intent, after-acquirer,
/// after-result, during-callback, during-inbox-write.
void crash_point(const char* name);

/// Fault injection for the assertion tests. With IDEMPAY_BREAK_AT=NAME (or NAME:N), the
/// invariant named NAME reads as broken the first (or N-th) time it is checked, so that its
/// IDEMPAY_INVARIANT stops the process as a real breach would. Otherwise always true.
/// Invariants: committed-payment (a payment's commit has landed with a new version).
bool holds(const char* name);

/// Fault injection for the failover tests. With IDEMPAY_FAULT_AT=NAME (or NAME:N), true the
/// first (or N-th) time point NAME is reached, where the caller then acts out the fault.
/// Points: commit-answer-lost (the PostgreSQL store drops its session once a group's COMMIT
/// has succeeded, as if the answer never came), commit-never-sent (it drops the session just
/// before sending the group's writes and COMMIT).
bool inject(const char* name);

}  // namespace idempay::fault
