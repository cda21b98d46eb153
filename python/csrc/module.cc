// tutti.torch._C: the ProcessGroupTutti class (a torch.distributed ProcessGroup) and the
// tutti additions reachable from Python. The backend is registered by tutti/torch/__init__.py.
#include <pybind11/chrono.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>

#include "comm_hooks.h"
#include "flight_recorder.h"
#include "process_group.h"

namespace py = pybind11;
using tutti::torch_backend::ProcessGroupTutti;

namespace {

// The tutti backend of a process group (its CPU backend), or nullptr.
ProcessGroupTutti* tuttiBackend(const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
  if (!pg || !pg->hasBackends()) return nullptr;
  try {
    return dynamic_cast<ProcessGroupTutti*>(pg->getBackend(c10::DeviceType::CPU).get());
  } catch (const std::exception&) {
    return nullptr;
  }
}

c10::intrusive_ptr<ProcessGroupTutti> tuttiGroupPtr(
    const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
  auto* t = tuttiBackend(pg);
  if (t == nullptr) throw std::invalid_argument("not a tutti process group");
  return c10::intrusive_ptr<ProcessGroupTutti>::reclaim_copy(t);
}

ProcessGroupTutti& tuttiGroup(const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
  auto* t = tuttiBackend(pg);
  if (t == nullptr) throw std::invalid_argument("not a tutti process group");
  return *t;
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "tutti's torch.distributed backend (C++ part)";
  py::module_::import("torch.distributed");  // registers c10d::Backend, Store, Work
  py::class_<ProcessGroupTutti, c10d::Backend, c10::intrusive_ptr<ProcessGroupTutti>>(
      m, "ProcessGroupTutti")
      .def(py::init<const c10::intrusive_ptr<c10d::Store>&, int, int, double>(), py::arg("store"),
           py::arg("rank"), py::arg("size"), py::arg("timeout_seconds"),
           py::call_guard<py::gil_scoped_release>())
      // torch.distributed._time_estimator (ProcessGroupTutti::startTimeEstimate).
      .def("_start_time_estimate", &ProcessGroupTutti::startTimeEstimate,
           py::call_guard<py::gil_scoped_release>())
      .def("_end_time_estimate", &ProcessGroupTutti::endTimeEstimate,
           py::call_guard<py::gil_scoped_release>());

  // The flight recorder's operations (flight_recorder.h) as torch's dump writes its entries.
  m.def("flight_recorder_entries", [] {
    py::list out;
    for (const auto& e : tutti::torch_backend::FlightRecorder::get().entries()) {
      py::dict d;
      d["record_id"] = e.id;
      d["pg_id"] = e.pgId;
      d["process_group"] = py::make_tuple(e.pgName, e.pgDesc);
      d["thread_name"] = e.threadName;
      d["thread_id"] = std::to_string(e.threadId);
      d["collective_seq_id"] = e.collectiveSeq;
      d["p2p_seq_id"] = e.p2pSeq;
      d["op_id"] = e.opId;
      d["profiling_name"] = e.profilingName;
      d["time_created_ns"] = e.createdNs;
      d["input_sizes"] = e.inputs.sizes;
      d["input_dtypes"] = e.inputs.dtypes;
      d["output_sizes"] = e.outputs.sizes;
      d["output_dtypes"] = e.outputs.dtypes;
      d["state"] = e.completedNs ? "completed" : e.startedNs ? "started" : "scheduled";
      d["time_discovered_started_ns"] = e.startedNs ? py::cast(*e.startedNs) : py::none();
      d["time_discovered_completed_ns"] = e.completedNs ? py::cast(*e.completedNs) : py::none();
      d["retired"] = e.completedNs.has_value();
      d["timeout_ms"] = e.timeoutMs;
      d["is_p2p"] = e.isP2P;
      if (e.durationMs) d["duration_ms"] = *e.durationMs;
      out.append(d);
    }
    return out;
  });
  m.def("recorder_pg_id", [](const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    return tuttiGroup(pg).recorderId();
  });

  m.def(
      "allreduce_compressed",
      [](const c10::intrusive_ptr<c10d::ProcessGroup>& pg, at::Tensor& tensor,
         const std::string& compressor, uint64_t key, bool errorFeedback) {
        return tuttiGroup(pg).allreduceCompressed(tensor, compressor, key, errorFeedback);
      },
      py::arg("group"), py::arg("tensor"), py::arg("compressor"), py::arg("key"),
      py::arg("error_feedback"), py::call_guard<py::gil_scoped_release>());
  py::class_<tutti::torch_backend::GraphHandle, std::shared_ptr<tutti::torch_backend::GraphHandle>>(
      m, "GraphHandle");
  m.def(
      "make_graph",
      [](const c10::intrusive_ptr<c10d::ProcessGroup>& pg, int kind, int rows, bool hierarchical) {
        return tuttiGroup(pg).makeGraph(kind, rows, hierarchical);
      },
      py::call_guard<py::gil_scoped_release>());
  m.def(
      "neighbor_allreduce",
      [](const c10::intrusive_ptr<c10d::ProcessGroup>& pg, at::Tensor& tensor,
         std::shared_ptr<tutti::torch_backend::GraphHandle> graph) {
        return tuttiGroup(pg).neighborAllreduce(tensor, std::move(graph));
      },
      py::call_guard<py::gil_scoped_release>());
  m.def(
      "raw_allreduce",
      [](const c10::intrusive_ptr<c10d::ProcessGroup>& pg, at::Tensor& tensor) {
        tuttiGroup(pg).rawAllreduce(tensor);
      },
      py::call_guard<py::gil_scoped_release>());
  m.def("stream_stats", [](const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    auto s = tuttiGroup(pg).streamStats();
    py::dict d;
    d["at_submit"] = s.atSubmit;
    d["by_waiter"] = s.byWaiter;
    d["on_worker"] = s.onWorker;
    return d;
  });
  m.def(
      "set_algorithm",
      [](const c10::intrusive_ptr<c10d::ProcessGroup>& pg, const std::string& spec) {
        tuttiGroup(pg).setAlgorithm(spec);
      },
      py::call_guard<py::gil_scoped_release>());
  m.def("last_algorithm", [](const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    return tuttiGroup(pg).lastAlgorithm();
  });
  m.def("transports", [](const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    const char* t = tuttiCommTransports(tuttiGroup(pg).comm());
    return std::string(t ? t : "");
  });
  m.def("compression_stats", [](const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    tuttiCompressionStats_t s{};
    if (tuttiCompressionStats(tuttiGroup(pg).comm(), &s) != tuttiSuccess)
      throw std::runtime_error(tuttiGetLastError(tuttiGroup(pg).comm()));
    py::dict d;
    d["wire_bytes_last_call"] = s.wireBytesLastCall;
    d["dense_bytes_last_call"] = s.denseBytesLastCall;
    d["wire_bytes_total"] = s.wireBytesTotal;
    d["calls"] = s.calls;
    d["error_feedback_keys"] = s.errorFeedbackKeys;
    return d;
  });
  m.def(
      "dump_trace",
      [](const c10::intrusive_ptr<c10d::ProcessGroup>& pg, const std::string& path) {
        tuttiComm_t comm = tuttiGroup(pg).comm();
        if (tuttiCommDumpTrace(comm, path.c_str()) != tuttiSuccess)
          throw std::runtime_error(std::string("tutti dump_trace: ") + tuttiGetLastError(comm));
      },
      py::call_guard<py::gil_scoped_release>());
  m.def(
      "agree_failed_ranks",
      [](const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
        tuttiComm_t comm = tuttiGroup(pg).comm();
        int size = 0;
        tuttiCommCount(comm, &size);
        std::vector<int> failed(size > 0 ? size : 1);
        int count = 0;
        if (tuttiCommAgreeFailedRanks(comm, failed.data(), &count) != tuttiSuccess)
          throw std::runtime_error(std::string("tutti agree_failed_ranks: ") +
                                   tuttiGetLastError(comm));
        failed.resize(count);
        return failed;
      },
      py::call_guard<py::gil_scoped_release>());
  // DDP communication hooks in C++ (comm_hooks.h), on a DDP model's reducer.
  m.def(
      "register_avg_hook",
      [](c10d::Reducer& reducer, const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
        reducer.register_comm_hook(
            std::make_unique<tutti::torch_backend::AvgCommHook>(tuttiGroupPtr(pg)));
      },
      py::arg("reducer"), py::arg("group"));
  m.def(
      "register_compressed_hook",
      [](c10d::Reducer& reducer, const c10::intrusive_ptr<c10d::ProcessGroup>& pg,
         const std::string& compressor, uint64_t keyBase, bool errorFeedback) {
        reducer.register_comm_hook(std::make_unique<tutti::torch_backend::CompressedCommHook>(
            tutti::torch_backend::CompressedHookState{tuttiGroupPtr(pg), compressor, keyBase,
                                                      errorFeedback}));
      },
      py::arg("reducer"), py::arg("group"), py::arg("compressor"), py::arg("key_base"),
      py::arg("error_feedback"));
  m.def("is_tutti_group", [](const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    return tuttiBackend(pg) != nullptr;
  });
}
