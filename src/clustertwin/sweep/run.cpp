#include "clustertwin/sweep/run.h"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "clustertwin/base/check.h"

#if CT_HAVE_MPI
#include <mpi.h>
#endif

namespace clustertwin::sweep {
namespace {

[[maybe_unused]] constexpr int kTagReady = 1;   // worker -> 0: give me a point
[[maybe_unused]] constexpr int kTagResult = 2;  // worker -> 0: a point's result
[[maybe_unused]] constexpr int kTagWork = 3;    // 0 -> worker: a point id, or -1 to stop

[[maybe_unused]] std::string serialize(const PointResult& r) {
  return nlohmann::json{{"id", r.id}, {"ok", r.ok}, {"error", r.error}, {"results", r.results}}
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

[[maybe_unused]] PointResult deserialize(const std::string& s) {
  PointResult r;
  const auto j = nlohmann::json::parse(s, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    r.id = -1;
    return r;
  }
  r.id = j.value("id", int64_t{-1});
  r.ok = j.value("ok", false);
  r.error = j.value("error", std::string());
  r.results = j.contains("results") ? j["results"] : nlohmann::json();
  return r;
}

bool launched_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(v) != nullptr) return true;
  }
  return false;
}

}  // namespace

bool built_with_mpi() { return CT_HAVE_MPI != 0; }

Cluster::Cluster() {
#if CT_HAVE_MPI
  if (!launched_by_mpirun()) return;
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  mpi_ = true;
#endif
}

Cluster::~Cluster() {
#if CT_HAVE_MPI
  if (mpi_) MPI_Finalize();
#endif
}

int Cluster::broadcast(int value) const {
#if CT_HAVE_MPI
  if (mpi_ && size_ > 1) MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
#endif
  return value;
}

base::Result<RunSummary> run_sweep(const Design& design, Store* store, const PointFn& run_point,
                                   const RunOptions& options, const Cluster& cluster) {
  const auto& points = design.points;
#if CT_HAVE_MPI
  if (cluster.rank() != 0) {
    // A worker rank: ask rank 0 for points until it says stop.
    MPI_Send(nullptr, 0, MPI_CHAR, 0, kTagReady, MPI_COMM_WORLD);
    while (true) {
      int64_t id = -1;
      MPI_Recv(&id, 1, MPI_INT64_T, 0, kTagWork, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (id < 0 || id >= static_cast<int64_t>(points.size())) break;
      const auto& pt = points[static_cast<size_t>(id)];
      PointResult r = run_point(pt, design.scenario(pt));
      r.id = id;
      const std::string msg = serialize(r);
      MPI_Send(msg.data(), static_cast<int>(msg.size()), MPI_CHAR, 0, kTagResult, MPI_COMM_WORLD);
    }
    return RunSummary{};
  }
#endif
  CT_CHECK(store != nullptr, "rank 0 runs a sweep with its store");
  RunSummary sum;
  sum.points = static_cast<int64_t>(points.size());
  sum.already_done = store->done_count();
  sum.ranks = cluster.size();
  std::vector<int64_t> todo;
  for (size_t i = 0; i < points.size(); ++i) {
    if (!store->done()[i]) todo.push_back(static_cast<int64_t>(i));
  }
  const auto total = static_cast<int64_t>(todo.size());

  std::mutex m;
  std::condition_variable cv;
  size_t next = 0;  // todo[next] is the next point handed out
  bool stop = false;
  std::deque<PointResult> finished;
  auto take = [&]() -> int64_t {
    std::lock_guard lock(m);
    if (stop || next >= todo.size()) return -1;
    return todo[next++];
  };
  // A local runner takes a point and builds its scenario under the lock: yaml-cpp nodes of the
  // design are shared and yaml-cpp is not thread-safe.
  auto take_local = [&](YAML::Node& scenario) -> int64_t {
    std::lock_guard lock(m);
    if (stop || next >= todo.size()) return -1;
    const int64_t id = todo[next++];
    scenario = design.scenario(points[static_cast<size_t>(id)]);
    return id;
  };
  const int threads = std::max(1, options.threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      while (true) {
        YAML::Node scenario;
        const int64_t id = take_local(scenario);
        if (id < 0) break;
        PointResult r = run_point(points[static_cast<size_t>(id)], scenario);
        r.id = id;
        {
          std::lock_guard lock(m);
          finished.push_back(std::move(r));
        }
        cv.notify_one();
      }
    });
  }

  std::optional<base::Error> failure;
  int64_t received = 0;
  auto store_one = [&](const PointResult& r) {
    ++received;
    if (failure) return;
    if (auto st = store->put(r); !st) {
      failure = st.error();
      std::lock_guard lock(m);
      stop = true;
      return;
    }
    ++sum.ran;
    if (!r.ok) ++sum.failed;
    if (options.progress) options.progress(sum.ran, total);
  };
  [[maybe_unused]] int remote = cluster.size() - 1;  // worker ranks not yet told to stop
  while (true) {
    bool idle = true;
#if CT_HAVE_MPI
    if (remote > 0) {
      int flag = 0;
      MPI_Status status;
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status);
      if (flag != 0) {
        idle = false;
        int bytes = 0;
        MPI_Get_count(&status, MPI_CHAR, &bytes);
        std::string msg(static_cast<size_t>(bytes), '\0');
        MPI_Recv(msg.data(), bytes, MPI_CHAR, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        if (status.MPI_TAG == kTagResult) {
          PointResult r = deserialize(msg);
          if (r.id < 0 || r.id >= sum.points) {
            failure = base::Error{"rank " + std::to_string(status.MPI_SOURCE) +
                                      " sent a result that is not valid JSON",
                                  {},
                                  0,
                                  base::ErrorKind::kSystem};
            std::lock_guard lock(m);
            stop = true;
          } else {
            store_one(r);
          }
        }
        const int64_t id = take();
        MPI_Send(&id, 1, MPI_INT64_T, status.MPI_SOURCE, kTagWork, MPI_COMM_WORLD);
        if (id < 0) --remote;
      }
    }
#endif
    std::deque<PointResult> batch;
    {
      std::lock_guard lock(m);
      batch.swap(finished);
    }
    for (const auto& r : batch) {
      idle = false;
      store_one(r);
    }
    size_t handed = 0;
    {
      std::lock_guard lock(m);
      handed = next;
      if (received == static_cast<int64_t>(handed) && (stop || next >= todo.size()) &&
          remote == 0) {
        break;
      }
    }
    if (idle) {
      // Wait for a local result; poll MPI every 200 us meanwhile (a blocking receive would
      // spin a core on an oversubscribed node).
      std::unique_lock lock(m);
      cv.wait_for(lock, std::chrono::microseconds(remote > 0 ? 200 : 50'000),
                  [&] { return !finished.empty(); });
    }
  }
  for (auto& t : pool) t.join();
  if (failure) return base::fail(*failure);
  return sum;
}

}  // namespace clustertwin::sweep
