#include "comm/connection_set.h"

#include <map>
#include <set>

#include "common/error.h"
#include "common/log.h"

namespace tutti {

using GrowFn = transport::Transport::GrowFn;

ConnectionSet::ConnectionSet(int rank, int nranks,
                             std::vector<std::unique_ptr<transport::Transport>> transports,
                             std::string forcedTransport,
                             std::function<std::string(int)> describePeer)
    : rank_(rank),
      transports_(std::move(transports)),
      forcedTransport_(std::move(forcedTransport)),
      describePeer_(std::move(describePeer)),
      connections_(nranks),
      pointers_(nranks, nullptr) {}

ConnectionSet::~ConnectionSet() {
  // Connections before the transports that made them.
  connections_.clear();
  transports_.clear();
}

void ConnectionSet::setup(const transport::Context& ctx) {
  peers_ = ctx.peers;
  for (auto& t : transports_) t->setup(ctx);
}

transport::Transport* ConnectionSet::transportFor(int peer) {
  for (auto& t : transports_)
    if (t->canConnect(peers_[rank_], peers_[peer])) return t.get();
  fail(tuttiUnsupported, "no transport can connect rank ", rank_, " to ", describePeer_(peer),
       (forcedTransport_.empty() ? std::string() : " (TUTTI_TRANSPORT=" + forcedTransport_ + ")"));
}

bool ConnectionSet::needsConnection(std::span<const int> peers) const {
  for (int p : peers)
    if (p != rank_ && !connections_[p]) return true;
  return false;
}

void ConnectionSet::connect(std::span<const int> peers, double timeoutSec) {
  connect(peers, timeoutSec, {});
}

void ConnectionSet::connect(std::span<const int> peers, double timeoutSec, const GrowFn& grow) {
  std::map<transport::Transport*, std::vector<int>> todo;
  std::set<int> listed;  // peers given to a transport, or waiting for theirs
  auto take = [&](std::span<const int> more) {
    for (int p : more)
      if (p != rank_ && !connections_[p] && listed.insert(p).second)
        todo[transportFor(p)].push_back(p);
  };
  take(peers);
  while (!todo.empty()) {
    auto node = todo.extract(todo.begin());
    transport::Transport* t = node.key();
    // New peers of this transport join its connect; the others wait in todo.
    auto growHere = [&]() -> std::vector<int> {
      take(grow());
      auto it = todo.find(t);
      if (it == todo.end()) return {};
      std::vector<int> mine = std::move(it->second);
      todo.erase(it);
      return mine;
    };
    Deadline deadline(timeoutSec);
    connectingTo_ = node.mapped();
    struct ClearOnExit {
      std::vector<int>& v;
      ~ClearOnExit() { v.clear(); }
    } clear{connectingTo_};
    for (auto& [peer, conn] :
         t->connectGrowing(node.mapped(), deadline, grow ? growHere : GrowFn{})) {
      TUTTI_INFO(kTransport,
                 "rank " << rank_ << " -> " << describePeer_(peer) << " via " << t->name());
      pointers_[peer] = conn.get();
      connections_[peer] = std::move(conn);
    }
  }
}

void ConnectionSet::closeAll() {
  pointers_.assign(pointers_.size(), nullptr);
  size_t n = connections_.size();
  connections_.clear();
  connections_.resize(n);
}

std::unique_ptr<transport::Window> ConnectionSet::createWindow(size_t bytes,
                                                               const Deadline& deadline) {
  for (auto& t : transports_)
    if (auto w = t->createWindow(bytes, deadline)) return w;
  return nullptr;
}

std::string ConnectionSet::inUse() const {
  std::set<std::string> names;
  for (const auto& c : connections_)
    if (c) names.insert(c->transportName());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
  return out.empty() ? "none" : out;
}

}  // namespace tutti
