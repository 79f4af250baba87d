// The decoder of the kernel's binary ring-buffer pages, as trace_pipe_raw hands them out
// (trace_internal.h). Nothing about the layout is assumed: the page header's fields come from
// events/header_page, the event header's bit split and special types from events/header_event,
// and every event's field offsets from its events/<sys>/<event>/format.
//
// A page: <u64 timestamp><local_t commit (flags in the top bits)><data: commit bytes>; the data
// is a run of records, each a u32 header "type_len:5 | time_delta:27" followed by
//   type_len 1..max_data_type: type_len * 4 bytes of event data;
//   0: a u32 length (itself included), then the data;
//   padding: a u32 length to skip (a discarded event; time_delta 0: the rest of the page);
//   time_extend: a u32 holding the delta's bits above time_delta_bits;
//   time_stamp: the same, an absolute time instead of a delta.
//
//   RingLayout layout; ParseHeaderPage(header_page_text, &layout, &why);
//   WalkPage(layout, page, &info, [&](const RawRecord& r) { decoder.Decode(r, cpu, &e); }, &why);
//
// Thread contract: free functions and a decoder that is const once filled; any non-RT thread.
#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "trace_internal.h"

namespace rtloop::explain::trace {
namespace {

constexpr std::uint64_t kMissedEvents = 1ULL << 31;  // commit flags (kernel ring_buffer.c)
constexpr std::uint64_t kMissedStored = 1ULL << 30;
constexpr std::uint64_t kCommitMask = (1ULL << 27) - 1;

template <typename T>
bool ToInt(std::string_view s, T* out) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  if (s.empty()) return false;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// The number after "key:" up to ';' in a format line ("offset:8;"), -1 when absent.
long LineNumber(std::string_view line, std::string_view key) {
  const std::size_t at = line.find(key);
  if (at == std::string_view::npos) return -1;
  std::string_view v = line.substr(at + key.size());
  v = v.substr(0, v.find(';'));
  long n = -1;
  return ToInt(v, &n) ? n : -1;
}

// "field:<type> <name>[N];\toffset:..;\tsize:..;\tsigned:..;" -> name and spec.
bool ParseFieldLine(std::string_view line, std::string* name, FieldSpec* spec) {
  const std::size_t f = line.find("field:");
  if (f == std::string_view::npos) return false;
  std::string_view decl = line.substr(f + 6);
  decl = decl.substr(0, decl.find(';'));
  while (!decl.empty() && decl.back() == ' ') decl.remove_suffix(1);
  if (const std::size_t br = decl.find('['); br != std::string_view::npos) {
    // "char prev_comm[16]" names prev_comm; "__data_loc char[] name" has its [] before the name.
    const std::size_t sp = decl.rfind(' ');
    if (sp == std::string_view::npos || br > sp) decl = decl.substr(0, br);
  }
  const std::size_t sp = decl.find_last_of(" *");
  const std::string_view n = sp == std::string_view::npos ? decl : decl.substr(sp + 1);
  if (n.empty()) return false;
  const long offset = LineNumber(line, "offset:");
  const long size = LineNumber(line, "size:");
  if (offset < 0 || size <= 0 || offset > 65535 || size > 65535) return false;
  *name = std::string(n);
  spec->offset = static_cast<int>(offset);
  spec->size = static_cast<int>(size);
  spec->is_signed = LineNumber(line, "signed:") == 1;
  spec->loc = decl.find("__data_loc") != std::string_view::npos  ? 1
              : decl.find("__rel_loc") != std::string_view::npos ? 2
                                                                 : 0;
  return true;
}

// The { N, "NAME" } pairs of a print fmt's __print_symbolic.
void ParseSymbols(std::string_view fmt, std::vector<std::pair<long, std::string>>* out) {
  std::size_t pos = 0;
  while ((pos = fmt.find('{', pos)) != std::string_view::npos) {
    ++pos;
    const std::size_t comma = fmt.find(',', pos);
    const std::size_t q1 = fmt.find('"', pos);
    if (comma == std::string_view::npos || q1 == std::string_view::npos || q1 < comma) continue;
    const std::size_t q2 = fmt.find('"', q1 + 1);
    const std::size_t close = fmt.find('}', pos);
    if (q2 == std::string_view::npos || close == std::string_view::npos || close < q2) continue;
    long n = 0;
    if (!ToInt(fmt.substr(pos, comma - pos), &n)) continue;
    out->emplace_back(n, std::string(fmt.substr(q1 + 1, q2 - q1 - 1)));
  }
}

template <typename T>
std::uint64_t Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// A host-order unsigned value of 1, 2, 4 or 8 bytes (the pages are in the host's byte order).
std::uint64_t ReadUnsigned(const char* p, int size) {
  switch (size) {
    case 1:
      return Load<std::uint8_t>(p);
    case 2:
      return Load<std::uint16_t>(p);
    case 4:
      return Load<std::uint32_t>(p);
    case 8:
      return Load<std::uint64_t>(p);
    default:
      return 0;
  }
}

bool Fits(const FieldSpec& f, std::string_view data) {
  return f.offset >= 0 &&
         static_cast<std::size_t>(f.offset) + static_cast<std::size_t>(f.size) <= data.size();
}

// An integer field (sign-extended when the format says signed); `fallback` when absent.
std::int64_t Int(const FieldSpec& f, std::string_view data, std::int64_t fallback = -1) {
  if (!Fits(f, data) || f.loc != 0 || (f.size != 1 && f.size != 2 && f.size != 4 && f.size != 8)) {
    return fallback;
  }
  const std::uint64_t u = ReadUnsigned(data.data() + f.offset, f.size);
  if (!f.is_signed || f.size == 8) return static_cast<std::int64_t>(u);
  const int bits = f.size * 8;
  const std::uint64_t sign = 1ULL << (bits - 1);
  return static_cast<std::int64_t>((u ^ sign) - sign);
}

// A string field: a fixed char array or a __data_loc/__rel_loc string, up to its first NUL.
std::string_view Str(const FieldSpec& f, std::string_view data) {
  if (!Fits(f, data)) return {};
  std::size_t at = static_cast<std::size_t>(f.offset);
  std::size_t len = static_cast<std::size_t>(f.size);
  if (f.loc != 0) {
    if (f.size != 4) return {};
    const auto v = static_cast<std::uint32_t>(ReadUnsigned(data.data() + f.offset, 4));
    at = v & 0xffffu;
    len = v >> 16;
    if (f.loc == 2) at += static_cast<std::size_t>(f.offset) + 4;
    if (at > data.size() || len > data.size() - at) return {};
  }
  std::string_view s = data.substr(at, len);
  return s.substr(0, s.find('\0'));
}

EventType TypeOf(std::string_view name) {
  if (name == "sched_switch") return EventType::kSchedSwitch;
  if (name == "sched_waking") return EventType::kSchedWaking;
  if (name == "irq_handler_entry") return EventType::kIrqEntry;
  if (name == "irq_handler_exit") return EventType::kIrqExit;
  if (name == "softirq_entry") return EventType::kSoftirqEntry;
  if (name == "softirq_exit") return EventType::kSoftirqExit;
  if (name == "hrtimer_expire_entry") return EventType::kHrtimerEntry;
  if (name == "hrtimer_expire_exit") return EventType::kHrtimerExit;
  return EventType::kOther;
}

// The fields each type decodes, in the slots Known::f holds them in.
std::vector<std::string_view> SlotsOf(EventType type) {
  switch (type) {
    case EventType::kSchedSwitch:
      return {"prev_comm", "prev_pid", "prev_prio", "prev_state",
              "next_comm", "next_pid", "next_prio"};
    case EventType::kSchedWaking:
      return {"", "", "", "", "comm", "pid", "prio"};
    case EventType::kIrqEntry:
      return {"irq", "name"};
    case EventType::kIrqExit:
      return {"irq", "ret"};
    case EventType::kSoftirqEntry:
    case EventType::kSoftirqExit:
      return {"vec"};
    case EventType::kHrtimerEntry:
      return {"hrtimer", "now", "function"};
    default:
      return {};
  }
}

constexpr char kHrtimerWakeup[] = "hrtimer_wakeup";
constexpr char kUnknown[] = "unknown";

}  // namespace

FieldSpec EventFormat::Find(std::string_view field) const {
  for (const auto& [n, spec] : fields) {
    if (n == field) return spec;
  }
  return {};
}

bool ParseEventFormat(std::string_view text, EventFormat* out, std::string* why) {
  *out = EventFormat{};
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.rfind("name: ", 0) == 0) {
      out->name = std::string(line.substr(6));
    } else if (line.rfind("ID: ", 0) == 0) {
      if (!ToInt(line.substr(4), &out->id) || out->id < 0 || out->id > 65535) out->id = -1;
    } else if (line.rfind("print fmt:", 0) == 0) {
      ParseSymbols(line, &out->symbols);
    } else {
      std::string name;
      FieldSpec spec;
      if (ParseFieldLine(line, &name, &spec)) out->fields.emplace_back(std::move(name), spec);
    }
  }
  if (out->name.empty() || out->id < 0) {
    *why = "the format has no name or ID line";
    return false;
  }
  if (out->Find("common_type").offset < 0) {
    *why = "the format of " + out->name + " has no common_type field";
    return false;
  }
  return true;
}

bool ParseHeaderPage(std::string_view text, RingLayout* layout, std::string* why) {
  std::size_t pos = 0;
  int data_size = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    std::string name;
    FieldSpec f;
    if (!ParseFieldLine(line, &name, &f)) continue;
    if (name == "timestamp") {
      layout->timestamp_offset = f.offset;
      layout->timestamp_size = f.size;
    } else if (name == "commit") {
      layout->commit_offset = f.offset;
      layout->commit_size = f.size;
    } else if (name == "data") {
      layout->data_offset = f.offset;
      data_size = f.size;
    }
  }
  const bool sizes = layout->timestamp_size == 8 &&
                     (layout->commit_size == 4 || layout->commit_size == 8) && data_size > 0;
  // Both before the data: WalkPage reads them from a page that may hold only its header.
  if (layout->timestamp_offset < 0 || layout->commit_offset < 0 || !sizes ||
      layout->data_offset < layout->commit_offset + layout->commit_size ||
      layout->data_offset < layout->timestamp_offset + layout->timestamp_size) {
    *why =
        "events/header_page does not give an 8-byte timestamp and a 4- or 8-byte commit before "
        "the data";
    return false;
  }
  layout->page_size = layout->data_offset + data_size;
  return true;
}

bool ParseHeaderEvent(std::string_view text, RingLayout* layout, std::string* why) {
  // The number after `key`, between `after` and `until` ("type_len    :    5 bits",
  // "padding     : type == 29"); -1 when absent or not a number.
  const auto number = [&](std::string_view key, std::string_view after, std::string_view until) {
    const std::size_t at = text.find(key);
    if (at == std::string_view::npos) return -1L;
    std::string_view v = text.substr(at + key.size());
    const std::size_t from = v.find(after);
    if (from == std::string_view::npos) return -1L;
    v = v.substr(from + after.size());
    v = v.substr(0, v.find(until));
    long n = -1;
    return ToInt(v, &n) ? n : -1L;
  };
  const auto bits = [&](std::string_view key) { return number(key, ":", "bits"); };
  const auto type = [&](std::string_view key) { return number(key, "==", "\n"); };
  layout->type_len_bits = static_cast<int>(bits("type_len"));
  layout->time_delta_bits = static_cast<int>(bits("time_delta"));
  layout->padding_type = static_cast<int>(type("padding"));
  layout->time_extend_type = static_cast<int>(type("time_extend"));
  layout->time_stamp_type = static_cast<int>(type("time_stamp"));
  layout->max_data_type = static_cast<int>(type("data max type_len"));
  const int max = (1 << std::clamp(layout->type_len_bits, 0, 8)) - 1;
  // type_len is a handful of bits (5 since 2.6.x): 1..8 keeps every shift of WalkPage defined.
  if (layout->type_len_bits < 1 || layout->type_len_bits > 8 ||
      layout->type_len_bits + layout->time_delta_bits != 32 || layout->padding_type <= 0 ||
      layout->padding_type > max || layout->time_extend_type <= 0 ||
      layout->time_extend_type > max || layout->time_stamp_type <= 0 ||
      layout->time_stamp_type > max || layout->max_data_type <= 0 ||
      layout->max_data_type >= layout->padding_type) {
    *why =
        "events/header_event does not describe a 32-bit type_len/time_delta header with "
        "padding, time_extend and time_stamp types";
    return false;
  }
  return true;
}

namespace {

// The page header: the commit (data bytes) and the missed-events flags into `info`. False with
// `*why` when the page is shorter than its header or its commit.
bool ReadPageHeader(const RingLayout& l, std::string_view page, PageInfo* info, std::size_t* commit,
                    std::string* why) {
  if (l.data_offset < 0 || page.size() < static_cast<std::size_t>(l.data_offset)) {
    *why = "a page shorter than its header (" + std::to_string(page.size()) + " bytes)";
    return false;
  }
  const std::uint64_t flags = ReadUnsigned(page.data() + l.commit_offset, l.commit_size);
  *commit = static_cast<std::size_t>(flags & kCommitMask);
  const std::string_view data = page.substr(static_cast<std::size_t>(l.data_offset));
  info->used = static_cast<std::size_t>(l.data_offset) + std::min(*commit, data.size());
  if ((flags & kMissedEvents) != 0) {
    info->missed = true;
    // The count, when the kernel had room for it, follows the data.
    if ((flags & kMissedStored) != 0 && *commit + sizeof(long) <= data.size()) {
      info->lost = ReadUnsigned(data.data() + *commit, sizeof(long));
    }
  }
  if (*commit > data.size()) {
    *why = "a page whose commit (" + std::to_string(*commit) + " bytes) is beyond its data (" +
           std::to_string(data.size()) + ")";
    return false;
  }
  return true;
}

}  // namespace

bool WalkPage(const RingLayout& l, std::string_view page, PageInfo* info,
              const std::function<void(const RawRecord&)>& on_record, std::string* why) {
  *info = PageInfo{};
  std::size_t commit = 0;
  if (!ReadPageHeader(l, page, info, &commit, why)) return false;
  const std::string_view data = page.substr(static_cast<std::size_t>(l.data_offset));
  auto ts = static_cast<std::int64_t>(ReadUnsigned(page.data() + l.timestamp_offset, 8));
  const std::uint32_t type_mask = (1u << l.type_len_bits) - 1;
  std::size_t pos = 0;
  while (pos + 4 <= commit) {
    const auto header = static_cast<std::uint32_t>(ReadUnsigned(data.data() + pos, 4));
    const int type_len = static_cast<int>(header & type_mask);
    const std::uint64_t delta = header >> l.type_len_bits;
    pos += 4;
    const auto word = [&](std::uint32_t* v) {
      if (pos + 4 > commit) return false;
      *v = static_cast<std::uint32_t>(ReadUnsigned(data.data() + pos, 4));
      pos += 4;
      return true;
    };
    std::uint32_t arg = 0;
    std::size_t length = 0;
    if (type_len == l.padding_type) {
      if (delta == 0) break;  // the rest of the page is empty
      if (!word(&arg)) break;
      length = arg >= 4 ? arg - 4 : 0;  // the length counts its own word
    } else if (type_len == l.time_extend_type || type_len == l.time_stamp_type) {
      if (!word(&arg)) break;
      const std::uint64_t t = (static_cast<std::uint64_t>(arg) << l.time_delta_bits) + delta;
      // An absolute time keeps only the low bits: the top ones are the page's (kernel
      // rb_fix_abs_ts).
      if (type_len == l.time_stamp_type) {
        const int low = 32 + l.time_delta_bits;
        const std::uint64_t top = static_cast<std::uint64_t>(ts) & ~((1ULL << low) - 1);
        ts = static_cast<std::int64_t>(top | t);
      } else {
        ts = static_cast<std::int64_t>(static_cast<std::uint64_t>(ts) + t);
      }
      continue;
    } else if (type_len > l.max_data_type) {
      *why = "a record of type " + std::to_string(type_len) + " the header does not describe";
      return false;
    } else {
      if (type_len == 0) {
        if (!word(&arg) || arg < 4) {
          *why = "a record whose length word is missing or below 4";
          return false;
        }
        length = (static_cast<std::size_t>(arg) - 4 + 3) & ~std::size_t{3};
      } else {
        length = static_cast<std::size_t>(type_len) * 4;
      }
      ts = static_cast<std::int64_t>(static_cast<std::uint64_t>(ts) + delta);
      if (pos + length > commit) {
        *why = "a record of " + std::to_string(length) + " bytes beyond the page's commit";
        return false;
      }
      RawRecord r;
      r.ts_ns = ts;
      r.data = data.substr(pos, length);
      if (info->first_ns < 0) info->first_ns = ts;
      info->last_ns = ts;
      ++info->records;
      on_record(r);
      pos += length;
      continue;
    }
    if (pos + length > commit) break;  // a padding to the page's end
    ts = static_cast<std::int64_t>(static_cast<std::uint64_t>(ts) + delta);
    pos += length;
  }
  return true;
}

void EventDecoder::Add(const EventFormat& format) {
  if (formats_.empty()) {
    common_type_ = format.Find("common_type");
    common_pid_ = format.Find("common_pid");
  }
  Known k;
  k.type = TypeOf(format.name);
  k.name = format.name;
  const std::vector<std::string_view> slots = SlotsOf(k.type);
  for (std::size_t i = 0; i < slots.size() && i < 8; ++i) {
    if (!slots[i].empty()) k.f[i] = format.Find(slots[i]);
  }
  k.symbols = format.symbols;
  formats_[format.id] = std::move(k);
}

void EventDecoder::SetHrtimerWakeup(bool filtered, std::uint64_t address) {
  hrtimer_filtered_ = filtered;
  hrtimer_wakeup_ = address;
}

void EventDecoder::Decode(const RawRecord& r, int cpu, TraceEvent* e) const {
  *e = TraceEvent{};
  e->ts_ns = r.ts_ns;
  e->cpu = cpu;
  e->name = kUnknown;
  const std::string_view d = r.data;
  e->pid = static_cast<int>(Int(common_pid_, d));
  const auto it = formats_.find(static_cast<int>(Int(common_type_, d)));
  if (it == formats_.end()) return;
  const Known& k = it->second;
  e->name = k.name;
  // A record shorter than the fields its format declares is not this event.
  for (const FieldSpec& f : k.f) {
    if (f.offset >= 0 && !Fits(f, d)) return;
  }
  e->type = k.type;
  const FieldSpec* f = k.f;
  switch (k.type) {
    case EventType::kSchedSwitch:
      e->prev_comm = Str(f[0], d);
      e->prev_pid = static_cast<int>(Int(f[1], d));
      e->prev_prio = static_cast<int>(Int(f[2], d));
      e->prev_state = Int(f[3], d);
      [[fallthrough]];
    case EventType::kSchedWaking:
      e->next_comm = Str(f[4], d);
      e->next_pid = static_cast<int>(Int(f[5], d));
      e->next_prio = static_cast<int>(Int(f[6], d));
      break;
    case EventType::kIrqEntry:
      e->irq_name = Str(f[1], d);
      [[fallthrough]];
    case EventType::kIrqExit:
      e->irq = static_cast<int>(Int(f[0], d));
      break;
    case EventType::kSoftirqEntry:
    case EventType::kSoftirqExit:
      e->irq = static_cast<int>(Int(f[0], d));
      for (const auto& [n, s] : k.symbols) {
        if (n == e->irq) e->irq_name = s;
      }
      break;
    case EventType::kHrtimerEntry: {
      e->now_ns = Int(f[1], d);
      const auto fn = static_cast<std::uint64_t>(Int(f[2], d, 0));
      if (hrtimer_filtered_ || (hrtimer_wakeup_ != 0 && fn == hrtimer_wakeup_)) {
        e->function = kHrtimerWakeup;
      }
      break;
    }
    default:
      break;
  }
}

std::string FormatEvent(const TraceEvent& e) {
  if (!e.line.empty()) return std::string(e.line);
  char head[96];
  if (e.type == EventType::kLost) {
    std::snprintf(head, sizeof head, "CPU:%d [LOST %" PRIu64 " EVENTS]", e.cpu, e.lost);
    return head;
  }
  std::string s(e.comm.empty() ? std::string_view("<...>") : e.comm);
  std::snprintf(head, sizeof head, "-%d [%03d] %" PRId64 ".%06" PRId64 ": ", e.pid, e.cpu,
                e.ts_ns / 1'000'000'000, (e.ts_ns % 1'000'000'000) / 1000);
  s += head;
  s += e.name;
  s += ": ";
  const auto num = [](std::int64_t v) { return std::to_string(v); };
  switch (e.type) {
    case EventType::kSchedSwitch:
      s += "prev_comm=" + std::string(e.prev_comm) + " prev_pid=" + num(e.prev_pid) +
           " prev_prio=" + num(e.prev_prio) + " prev_state=" + num(e.prev_state) +
           " ==> next_comm=" + std::string(e.next_comm) + " next_pid=" + num(e.next_pid) +
           " next_prio=" + num(e.next_prio);
      break;
    case EventType::kSchedWaking:
      s += "comm=" + std::string(e.next_comm) + " pid=" + num(e.next_pid) +
           " prio=" + num(e.next_prio);
      break;
    case EventType::kIrqEntry:
      s += "irq=" + num(e.irq) + " name=" + std::string(e.irq_name);
      break;
    case EventType::kIrqExit:
      s += "irq=" + num(e.irq);
      break;
    case EventType::kSoftirqEntry:
    case EventType::kSoftirqExit:
      s += "vec=" + num(e.irq) + " [action=" + std::string(e.irq_name) + "]";
      break;
    case EventType::kHrtimerEntry:
      s += "function=" + std::string(e.function.empty() ? "?" : e.function) +
           " now=" + num(e.now_ns);
      break;
    default:
      break;
  }
  return s;
}

}  // namespace rtloop::explain::trace
