#include "directory.hpp"

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

void Directory::tick(uint64_t idle_generations) {
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
