// The text form of a process's report (report.h).
#include "inspect/report.h"

#include <cstdio>
#include <sstream>

#include "common/error.h"

namespace tutti::inspect {

namespace {

// A value on one line: newlines and tabs become spaces.
std::string oneLine(const std::string& s) {
  std::string out = s;
  for (char& c : out)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return out;
}

CommReport::State stateOf(const std::string& s) {
  if (s == "running") return CommReport::State::kRunning;
  if (s == "done") return CommReport::State::kDone;
  if (s == "failed") return CommReport::State::kFailed;
  TUTTI_CHECK_ARG(s == "none", "inspect report: unknown state '", s, "'");
  return CommReport::State::kNoCall;
}

void addField(CommReport& c, const std::string& key, const std::string& value) {
  std::istringstream in(value);
  if (key == "rank") {
    in >> c.rank >> c.nranks;
  } else if (key == "state") {
    c.state = stateOf(value);
  } else if (key == "record") {
    in >> c.record;
  } else if (key == "collective") {
    in >> c.collective;
  } else if (key == "call") {
    c.call = value;
  } else if (key == "algorithm") {
    c.algorithm = value;
  } else if (key == "seconds") {
    in >> c.seconds;
  } else if (key == "wait") {
    in >> c.waitPeer >> c.waitSeconds;
  } else if (key == "step") {
    c.waitStep = value;
  } else if (key == "failure") {
    c.failure = value;
  } else if (key == "recent") {
    c.recent.push_back(value);
  } else if (key == "latency") {
    c.latency.push_back(value);
  }  // unknown keys: from a newer library, ignored
  TUTTI_CHECK_ARG(!in.fail() || key == "call" || key == "algorithm" || key == "failure" ||
                      key == "step" || key == "recent" || key == "latency" || key == "state",
                  "inspect report: malformed '", key, "' line: ", value);
}

}  // namespace

const char* stateName(CommReport::State s) {
  switch (s) {
    case CommReport::State::kRunning:
      return "running";
    case CommReport::State::kDone:
      return "done";
    case CommReport::State::kFailed:
      return "failed";
    case CommReport::State::kNoCall:
      break;
  }
  return "none";
}

std::string encode(const ProcessReport& report) {
  std::ostringstream out;
  out << "host " << oneLine(report.host) << "\npid " << report.pid << "\n";
  for (const CommReport& c : report.comms) {
    char secs[64];
    out << "comm " << oneLine(c.name) << "\nrank " << c.rank << " " << c.nranks << "\nstate "
        << stateName(c.state) << "\nrecord " << c.record << "\ncollective " << c.collective << "\n";
    if (!c.call.empty()) out << "call " << oneLine(c.call) << "\n";
    if (!c.algorithm.empty()) out << "algorithm " << oneLine(c.algorithm) << "\n";
    std::snprintf(secs, sizeof secs, "%.3f", c.seconds);
    out << "seconds " << secs << "\n";
    if (c.waitPeer >= 0) {
      std::snprintf(secs, sizeof secs, "%.3f", c.waitSeconds);
      out << "wait " << c.waitPeer << " " << secs << "\n";
    }
    if (!c.waitStep.empty()) out << "step " << oneLine(c.waitStep) << "\n";
    if (!c.failure.empty()) out << "failure " << oneLine(c.failure) << "\n";
    for (const std::string& line : c.recent) out << "recent " << oneLine(line) << "\n";
    for (const std::string& line : c.latency) out << "latency " << oneLine(line) << "\n";
  }
  return out.str();
}

ProcessReport decode(const std::string& text) {
  ProcessReport report;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const size_t space = line.find(' ');
    const std::string key = line.substr(0, space);
    const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    if (key == "host") {
      report.host = value;
    } else if (key == "pid") {
      std::istringstream pid(value);
      TUTTI_CHECK_ARG(static_cast<bool>(pid >> report.pid), "inspect report: malformed pid '",
                      value, "'");
    } else if (key == "comm") {
      report.comms.emplace_back().name = value;
    } else {
      TUTTI_CHECK_ARG(!report.comms.empty(), "inspect report: '", key, "' before any comm line");
      addField(report.comms.back(), key, value);
    }
  }
  return report;
}

}  // namespace tutti::inspect
