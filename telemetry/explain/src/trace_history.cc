// RawHistory (trace_internal.h): each traced CPU's trace_pipe_raw consumed in binary, page by
// page, into a bounded in-memory history that Explain() decodes from. Reading a page costs the
// kernel a copy (no text formatting); decoding costs a few tens of ns per event.
//
//   Result<std::unique_ptr<RawHistory>> h = RawHistory::Open(tracefs, path, {1}, 256 << 10, true);
//   (*h)->Drain(0);
//   (*h)->Events(0, from_ns, to_ns, &events);
//
// Thread contract: one non-RT thread at a time (reads files, allocates).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "rtloop/framework/system_info.h"
#include "trace_internal.h"

namespace rtloop::explain::trace {
namespace {

constexpr std::size_t kMaxComms = 8192;

// The events whose records are decoded; every other id (osnoise...) is named by its format.
constexpr const char* kFormats[] = {
    "sched/sched_switch",         "sched/sched_waking", "irq/irq_handler_entry",
    "irq/irq_handler_exit",       "irq/softirq_entry",  "irq/softirq_exit",
    "timer/hrtimer_expire_entry",
};

Status ReadFormat(const std::string& events_dir, const std::string& event, EventDecoder* decoder) {
  std::string text;
  RTLOOP_RETURN_IF_ERROR(ReadWhole(events_dir + "/" + event + "/format", &text));
  EventFormat f;
  std::string why;
  if (!ParseEventFormat(text, &f, &why)) {
    return DataLossError(events_dir + "/" + event + "/format: " + why);
  }
  decoder->Add(f);
  return Status::Ok();
}

// hrtimer_wakeup's address in /proc/kallsyms, 0 when hidden (kptr_restrict) or absent.
std::uint64_t HrtimerWakeupAddress() {
  std::uint64_t a = 0;
  ForEachLine("/proc/kallsyms", [&](std::string_view line) {
    constexpr std::string_view kName = " hrtimer_wakeup";
    if (line.size() < 16 || line.substr(line.size() - kName.size()) != kName) return true;
    a = std::strtoull(std::string(line.substr(0, line.find(' '))).c_str(), nullptr, 16);
    return false;
  });
  return a;
}

}  // namespace

Result<std::unique_ptr<RawHistory>> RawHistory::Open(const std::string& tracefs,
                                                     const std::string& instance_path,
                                                     const std::vector<int>& cpus,
                                                     std::size_t history_bytes,
                                                     bool hrtimer_filtered) {
  std::unique_ptr<RawHistory> h(new RawHistory());
  std::string text;
  std::string why;
  const std::string events = tracefs + "/events";
  RTLOOP_RETURN_IF_ERROR(ReadWhole(events + "/header_page", &text));
  if (!ParseHeaderPage(text, &h->layout_, &why)) return DataLossError(why);
  RTLOOP_RETURN_IF_ERROR(ReadWhole(events + "/header_event", &text));
  if (!ParseHeaderEvent(text, &h->layout_, &why)) return DataLossError(why);
  for (const char* event : kFormats) {
    // An optional event this kernel lacks was noted by Open(); its records never come.
    if (access((instance_path + "/events/" + event).c_str(), F_OK) != 0) continue;
    RTLOOP_RETURN_IF_ERROR(ReadFormat(instance_path + "/events", event, &h->decoder_));
  }
  h->decoder_.SetHrtimerWakeup(hrtimer_filtered, hrtimer_filtered ? 0 : HrtimerWakeupAddress());
  h->history_bytes_ = history_bytes;
  // A drain reads at most what the kernel's buffer can hold, and a little more: it ends.
  h->max_pages_per_drain_ = history_bytes / static_cast<std::size_t>(h->layout_.page_size) + 16;
  h->buf_.resize(static_cast<std::size_t>(h->layout_.page_size));
  for (int cpu : cpus) {
    Cpu c;
    c.cpu = cpu;
    c.file = instance_path + "/per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw";
    c.fd = open(c.file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (c.fd < 0) {
      const int err = errno;
      for (Cpu& o : h->cpus_) close(o.fd);
      h->cpus_.clear();
      return ErrnoError(err, "cannot open " + c.file, "this kernel's tracefs refused it");
    }
    h->cpus_.push_back(std::move(c));
  }
  return h;
}

RawHistory::~RawHistory() {
  for (Cpu& c : cpus_) {
    if (c.fd >= 0) close(c.fd);
  }
}

void RawHistory::Learn(const TraceEvent& e) {
  if (comms_.size() > kMaxComms) comms_.clear();
  if (e.type == EventType::kSchedSwitch && e.prev_pid > 0) comms_[e.prev_pid] = e.prev_comm;
  if ((e.type == EventType::kSchedSwitch || e.type == EventType::kSchedWaking) && e.next_pid > 0) {
    comms_[e.next_pid] = e.next_comm;
  }
}

void RawHistory::Keep(Cpu* c, std::string_view page, const PageInfo& info) {
  Page p;
  p.bytes.assign(page.substr(0, info.used));
  p.info = info;
  c->bytes += p.bytes.size();
  c->pages.push_back(std::move(p));
  while (c->bytes > history_bytes_ && c->pages.size() > 1) {
    c->bytes -= c->pages.front().bytes.size();
    c->pages.pop_front();
  }
}

void RawHistory::Drain(std::size_t index) {
  Cpu& c = cpus_[index];
  const auto page_size = static_cast<std::size_t>(layout_.page_size);
  TraceEvent e;
  for (std::size_t n = 0; n < max_pages_per_drain_; ++n) {
    const ssize_t got = read(c.fd, buf_.data(), page_size);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == EAGAIN) return;  // nothing more: the usual end
    if (got <= 0) {
      const int err = errno;
      if (got < 0) c.errors = "cannot read " + c.file + ": " + ErrnoError(err, "read").message();
      return;
    }
    const std::string_view page(buf_.data(), static_cast<std::size_t>(got));
    PageInfo info;
    std::string why;
    const bool whole = WalkPage(
        layout_, page, &info,
        [&](const RawRecord& r) {
          decoder_.Decode(r, c.cpu, &e);
          Learn(e);
        },
        &why);
    if (!whole) c.errors = c.file + ": " + why + " (the rest of that page is left out)";
    if (info.records > 0 || info.missed) Keep(&c, page, info);
  }
}

void RawHistory::Events(std::size_t index, std::int64_t from_ns, std::int64_t to_ns,
                        std::vector<TraceEvent>* out) const {
  out->clear();
  const Cpu& c = cpus_[index];
  // The first page that reaches from_ns (pages are in time order).
  const auto first = std::partition_point(c.pages.begin(), c.pages.end(), [&](const Page& p) {
    return p.info.last_ns >= 0 && p.info.last_ns < from_ns;
  });
  std::int64_t last = -1;
  std::string why;
  for (auto p = first; p != c.pages.end() && p->info.first_ns <= to_ns; ++p) {
    if (p->info.missed && p != c.pages.begin()) {
      TraceEvent lost;
      lost.type = EventType::kLost;
      lost.cpu = c.cpu;
      lost.lost = std::max<std::uint64_t>(p->info.lost, 1);
      lost.ts_ns = last >= 0 ? last : p->info.first_ns;
      out->push_back(lost);
    }
    PageInfo info;
    (void)WalkPage(
        layout_, p->bytes, &info,
        [&](const RawRecord& r) {
          TraceEvent e;
          decoder_.Decode(r, c.cpu, &e);
          const auto comm = comms_.find(e.pid);
          if (comm != comms_.end()) e.comm = comm->second;
          if (e.pid == 0) e.comm = "<idle>";
          out->push_back(e);
        },
        &why);
    if (info.last_ns >= 0) last = info.last_ns;
  }
}

std::int64_t RawHistory::oldest_ns(std::size_t index) const {
  for (const Page& p : cpus_[index].pages) {
    if (p.info.first_ns >= 0) return p.info.first_ns;
  }
  return -1;
}

std::int64_t RawHistory::newest_ns(std::size_t index) const {
  const std::deque<Page>& pages = cpus_[index].pages;
  for (auto p = pages.rbegin(); p != pages.rend(); ++p) {
    if (p->info.last_ns >= 0) return p->info.last_ns;
  }
  return -1;
}

std::string RawHistory::TakeErrors(std::size_t index) {
  std::string e;
  e.swap(cpus_[index].errors);
  return e;
}

std::size_t RawHistory::bytes(std::size_t index) const { return cpus_[index].bytes; }

}  // namespace rtloop::explain::trace
