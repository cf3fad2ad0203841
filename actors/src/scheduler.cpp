#include "scheduler.hpp"

#include <mutex>
#include <thread>
#include <unordered_set>

#include <caf/detail/set_thread_name.hpp>
#include <caf/detail/thread_safe_actor_clock.hpp>
#include <caf/policy/work_sharing.hpp>
#include <caf/scheduler/coordinator.hpp>

namespace idempay::actors {

namespace {

class QuietClock final : public caf::detail::thread_safe_actor_clock {
public:
  using super = caf::detail::thread_safe_actor_clock;

  void set_ordinary_timeout(time_point t, caf::abstract_actor* self, caf::atom_value type, uint64_t id) override {
    note_timeouts(self);
    super::set_ordinary_timeout(t, self, type, id);
  }

  void set_request_timeout(time_point t, caf::abstract_actor* self, caf::message_id id) override {
    note_timeouts(self);
    super::set_request_timeout(t, self, id);
  }

  void set_multi_timeout(time_point t, caf::abstract_actor* self, caf::atom_value type, uint64_t id) override {
    note_timeouts(self);
    super::set_multi_timeout(t, self, type, id);
  }

  void cancel_timeouts(caf::abstract_actor* self) override {
    if (forget_timeouts(self)) {
      super::cancel_timeouts(self);
    }
  }

private:
  void note_timeouts(caf::abstract_actor* self) {
    std::lock_guard<std::mutex> lock(mutex_);
    with_timeouts_.insert(self->id());
  }

  bool forget_timeouts(caf::abstract_actor* self) {
    std::lock_guard<std::mutex> lock(mutex_);
    return with_timeouts_.erase(self->id()) > 0;
  }

  std::mutex mutex_;
  std::unordered_set<caf::actor_id> with_timeouts_;  // actors that set a timeout since their last cancellation
};

// CAF's coordinator keeps its clock to itself, so this one runs a clock of its own on a
// thread of its own; the coordinator's clock thread sleeps, never asked for anything.
class Scheduler final : public caf::scheduler::coordinator<caf::policy::work_sharing> {
public:
  using super = caf::scheduler::coordinator<caf::policy::work_sharing>;

  explicit Scheduler(caf::actor_system& system) : super(system) {}

  caf::detail::thread_safe_actor_clock& clock() noexcept override { return clock_; }

protected:
  void start() override {
    timer_ = std::thread([this] {
      caf::detail::set_thread_name("idempay-clock");
      system().thread_started();
      clock_.run_dispatch_loop();
      system().thread_terminates();
    });
    super::start();
  }

  void stop() override {
    super::stop();  // the workers and utility actors first: they may still schedule messages
    clock_.cancel_dispatch_loop();
    timer_.join();
  }

private:
  QuietClock clock_;
  std::thread timer_;
};

}  // namespace

caf::actor_system::module* make_scheduler(caf::actor_system& system) { return new Scheduler(system); }

}  // namespace idempay::actors
