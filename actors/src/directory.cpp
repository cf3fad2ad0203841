#include "directory.hpp"

#include "repeat_cache.hpp"

namespace idempay::actors {

caf::actor Directory::route(const std::string& payment_id) {
  std::lock_guard lock(mutex_);
  if (closed_) {
    return caf::actor();
  }
  auto [it, inserted] = entries_.try_emplace(payment_id);
  Entry& entry = it->second;
  if (inserted) {
    entry.actor = system_.spawn(payment_actor, context_, payment_id);
    entry.generation = first_generation_ + generations_.size();  // never equal: stamped below
  }
  stamp(it->first, entry);
  ++entry.forwarded;
  return entry.actor;
}

void Directory::stamp(const std::string& id, Entry& entry) {
  uint64_t current = first_generation_ + generations_.size() - 1;
  if (entry.generation != current) {
    entry.generation = current;
    generations_.back().push_back(id);
  }
}

bool Directory::try_retire(const std::string& payment_id, const caf::actor_addr& actor, uint64_t handled) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(payment_id);
  if (it == entries_.end() || it->second.actor.address() != actor || it->second.forwarded != handled) {
    return false;
  }
  entries_.erase(it);
  return true;
}

void Directory::forget(const std::string& payment_id, const caf::actor_addr& actor) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(payment_id);
  if (it != entries_.end() && it->second.actor.address() == actor) {
    entries_.erase(it);
  }
}

void Directory::arm_deadline(const std::string& payment_id, caf::actor_id actor, uint64_t attempt,
                             std::chrono::steady_clock::time_point due) {
  std::lock_guard lock(deadlines_mutex_);
  deadlines_.push_back({due, payment_id, actor, attempt});
}

void Directory::tick(uint64_t idle_generations) {
  offer_retirement(idle_generations);
  fire_due_deadlines();
  send_due_repeats();
}

void Directory::send_due_repeats() {
  if (context_->repeats == nullptr) {
    return;
  }
  for (const std::string& id : context_->repeats->due()) {
    send_repeats(id);
  }
}

void Directory::send_repeats(const std::string& payment_id) {
  // The sink is never answered: its end, once the command is done with, hands back whatever
  // the actor did not take.
  RepeatCache* cache = context_->repeats;
  send(payment_id, repeats_atom::value,
       RepeatsCommand{payment_id, ReplySink([cache, payment_id](const Reply&) { cache->hand_back(payment_id); })});
}

void Directory::offer_retirement(uint64_t idle_generations) {
  std::vector<caf::actor> idle;
  {
    std::lock_guard lock(mutex_);
    generations_.emplace_back();
    uint64_t current = first_generation_ + generations_.size() - 1;
    while (current - first_generation_ > idle_generations) {
      for (const std::string& id : generations_.front()) {
        auto it = entries_.find(id);
        if (it != entries_.end() && it->second.generation == first_generation_) {
          idle.push_back(it->second.actor);
          stamp(it->first, it->second);  // offered again a whole idle timeout later if it stays
        }
      }
      generations_.pop_front();
      ++first_generation_;
    }
  }
  for (const auto& actor : idle) {
    caf::anon_send(actor, idle_atom::value);
  }
}

void Directory::fire_due_deadlines() {
  std::vector<Deadline> due;
  {
    auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(deadlines_mutex_);
    while (!deadlines_.empty() && deadlines_.front().due <= now) {
      due.push_back(std::move(deadlines_.front()));
      deadlines_.pop_front();
    }
  }
  if (due.empty()) {
    return;
  }
  // Most creates ended long before their deadline and their actors retired: those are dropped
  // here, without a message.
  std::vector<std::pair<caf::actor, uint64_t>> live;
  {
    std::lock_guard lock(mutex_);
    for (const Deadline& d : due) {
      auto it = entries_.find(d.payment_id);
      if (it != entries_.end() && it->second.actor.id() == d.actor) {
        live.emplace_back(it->second.actor, d.attempt);
      }
    }
  }
  for (auto& [actor, attempt] : live) {
    caf::anon_send(actor, deadline_atom::value, attempt);
  }
}

size_t Directory::size() {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

void Directory::close(caf::exit_reason reason) {
  std::unordered_map<std::string, Entry> entries;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    entries.swap(entries_);
  }
  for (auto& [id, entry] : entries) {
    caf::anon_send_exit(entry.actor, reason);
  }
}

caf::behavior sweeper_actor(caf::event_based_actor* self, Directory* directory, std::chrono::milliseconds tick,
                            uint64_t idle_generations) {
  self->delayed_send(self, tick, tick_atom::value);
  return {
      [=](tick_atom) {
        directory->tick(idle_generations);
        self->delayed_send(self, tick, tick_atom::value);
      },
  };
}

}  // namespace idempay::actors
