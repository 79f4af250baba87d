// Tests of the binary ring-buffer page decoder (trace_raw.cc) on pages captured from this
// project's VM (kernel 6.18: instances/<name>/per_cpu/cpu1/trace_pipe_raw of an instance with
// TraceEvidence's events, and the same buffer's text `trace` read just before, testdata/trace_raw):
// every record decodes to what the kernel's own text says; layouts and field offsets come from
// the header and format files, not from the decoder; time extends, absolute stamps, padding and
// long records; damaged pages stop at the damage with a reason, never a read past the page.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "test_paths.h"
#include "trace_internal.h"

using rtloop::testing::SourcePath;

namespace rtloop::explain::trace {
namespace {

std::string Fixture(const std::string& name) {
  std::ifstream in(SourcePath("tests/explain/testdata") + "/trace_raw/" + name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

constexpr const char* kFormatFiles[] = {
    "sched_switch.format",         "sched_waking.format",  "irq_handler_entry.format",
    "irq_handler_exit.format",     "softirq_entry.format", "softirq_exit.format",
    "hrtimer_expire_entry.format",
};

struct Captured {
  RingLayout layout;
  EventDecoder decoder;
};

Captured LoadCaptured() {
  Captured c;
  std::string why;
  EXPECT_TRUE(ParseHeaderPage(Fixture("header_page.txt"), &c.layout, &why)) << why;
  EXPECT_TRUE(ParseHeaderEvent(Fixture("header_event.txt"), &c.layout, &why)) << why;
  for (const char* f : kFormatFiles) {
    EventFormat format;
    EXPECT_TRUE(ParseEventFormat(Fixture(f), &format, &why)) << f << ": " << why;
    c.decoder.Add(format);
  }
  c.decoder.SetHrtimerWakeup(/*filtered=*/true, 0);
  return c;
}

// Every record of the pages, decoded (comm left empty: the history fills it).
std::vector<TraceEvent> DecodePages(const Captured& c, std::string_view pages,
                                    std::vector<PageInfo>* infos = nullptr) {
  std::vector<TraceEvent> out;
  const auto size = static_cast<std::size_t>(c.layout.page_size);
  for (std::size_t at = 0; at + size <= pages.size(); at += size) {
    PageInfo info;
    std::string why;
    EXPECT_TRUE(WalkPage(
        c.layout, pages.substr(at, size), &info,
        [&](const RawRecord& r) {
          TraceEvent e;
          c.decoder.Decode(r, 1, &e);
          out.push_back(e);
        },
        &why))
        << why;
    if (infos != nullptr) infos->push_back(info);
  }
  return out;
}

TEST(TraceRawTest, LayoutAndFormatsAreReadFromThisKernelsFiles) {
  const Captured c = LoadCaptured();
  EXPECT_EQ(c.layout.page_size, 4096);
  EXPECT_EQ(c.layout.data_offset, 16);
  EXPECT_EQ(c.layout.commit_size, 8);
  EXPECT_EQ(c.layout.type_len_bits, 5);
  EXPECT_EQ(c.layout.time_delta_bits, 27);
  EXPECT_EQ(c.layout.padding_type, 29);
  EXPECT_EQ(c.layout.time_extend_type, 30);
  EXPECT_EQ(c.layout.time_stamp_type, 31);
  EXPECT_EQ(c.layout.max_data_type, 28);
  EventFormat f;
  std::string why;
  ASSERT_TRUE(ParseEventFormat(Fixture("sched_switch.format"), &f, &why)) << why;
  EXPECT_EQ(f.name, "sched_switch");
  EXPECT_EQ(f.id, 372);
  EXPECT_EQ(f.Find("next_pid").offset, 56);
  EXPECT_EQ(f.Find("prev_comm").size, 16);
  EXPECT_TRUE(f.Find("prev_state").is_signed);
  ASSERT_TRUE(ParseEventFormat(Fixture("irq_handler_entry.format"), &f, &why)) << why;
  EXPECT_EQ(f.Find("name").loc, 1);
  ASSERT_TRUE(ParseEventFormat(Fixture("softirq_entry.format"), &f, &why)) << why;
  ASSERT_GE(f.symbols.size(), 10u);
  EXPECT_EQ(f.symbols[3].second, "NET_RX");
  // Files that are not these are refused with a reason, not guessed at.
  RingLayout l;
  EXPECT_FALSE(ParseHeaderPage("field: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n", &l, &why));
  EXPECT_NE(why.find("header_page"), std::string::npos);
  EXPECT_FALSE(ParseHeaderEvent("type_len : 5 bits\ntime_delta : 26 bits\n", &l, &why));
  // A type_len of 32 bits would shift a 32-bit header by its width (undefined).
  EXPECT_FALSE(ParseHeaderEvent(
      "type_len : 32 bits\ntime_delta : 0 bits\npadding : type == 29\ntime_extend : type == "
      "30\ntime_stamp : type == 31\ndata max type_len == 28\n",
      &l, &why));
  // A timestamp or commit inside the data would be read past a page of only a header.
  EXPECT_FALSE(
      ParseHeaderPage("field: u64 timestamp;\toffset:40;\tsize:8;\tsigned:0;\n"
                      "field: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
                      "field: char data;\toffset:16;\tsize:4080;\tsigned:0;\n",
                      &l, &why));
  EXPECT_FALSE(ParseEventFormat("name: x\nformat:\n", &f, &why));
}

TEST(TraceRawTest, EveryRecordOfRealPagesDecodesAsTheKernelsTextOfTheSameBufferSaysIt) {
  const Captured c = LoadCaptured();
  const std::string pages = Fixture("pages.bin");
  ASSERT_EQ(pages.size(), 4u * 4096);
  std::vector<PageInfo> infos;
  const std::vector<TraceEvent> bin = DecodePages(c, pages, &infos);
  const std::string text = Fixture("trace.txt");
  const std::vector<TraceEvent> txt = ParseTrace(text);
  ASSERT_EQ(infos.size(), 4u);
  EXPECT_TRUE(infos[0].missed) << "the capture's buffer had wrapped before it was read";
  EXPECT_FALSE(infos[1].missed);
  ASSERT_EQ(bin.size(), txt.size());
  int irqs = 0;
  int softirqs = 0;
  int switches = 0;
  for (std::size_t i = 0; i < bin.size(); ++i) {
    const TraceEvent& b = bin[i];
    const TraceEvent& t = txt[i];
    SCOPED_TRACE(std::string(t.line));
    EXPECT_EQ((b.ts_ns + 500) / 1000, t.ts_ns / 1000);  // the text rounds to the nearest us
    EXPECT_EQ(b.pid, t.pid);
    EXPECT_EQ(b.cpu, t.cpu);
    EXPECT_EQ(b.type, t.type);
    EXPECT_EQ(b.name, t.name);
    EXPECT_EQ(b.prev_comm, t.prev_comm);
    EXPECT_EQ(b.prev_pid, t.prev_pid);
    EXPECT_EQ(b.prev_prio, t.prev_prio);
    EXPECT_EQ(b.next_comm, t.next_comm);
    EXPECT_EQ(b.next_pid, t.next_pid);
    EXPECT_EQ(b.next_prio, t.next_prio);
    EXPECT_EQ(b.irq, t.irq);
    EXPECT_EQ(b.irq_name, t.irq_name);
    EXPECT_EQ(b.function, t.function);
    EXPECT_EQ(b.now_ns, t.now_ns);
    irqs += b.type == EventType::kIrqEntry;
    softirqs += b.type == EventType::kSoftirqEntry;
    switches += b.type == EventType::kSchedSwitch;
  }
  EXPECT_GE(irqs, 1);
  EXPECT_GE(softirqs, 10);
  EXPECT_GE(switches, 50);
  // A decoded record formats as the kernel's line does, but for the columns it has not
  // (flags) and the state, which is its number.
  TraceEvent b = bin[2];
  b.comm = "sleep";
  EXPECT_EQ(FormatEvent(b),
            "sleep-19970 [001] 69932.916194: sched_switch: prev_comm=sleep prev_pid=19970 "
            "prev_prio=120 prev_state=32 ==> next_comm=bash next_pid=19929 next_prio=120");
}

// A page in a layout of our own making: a 4-byte commit, the data at 12, 2048-byte pages.
constexpr std::string_view kSmallHeaderPage =
    "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
    "\tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;\n"
    "\tfield: char data;\toffset:12;\tsize:2036;\tsigned:0;\n";

// sched_switch with its fields moved (as another kernel may lay them out).
constexpr std::string_view kMovedSwitch =
    "name: sched_switch\nID: 7\nformat:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
    "\tfield:pid_t next_pid;\toffset:8;\tsize:4;\tsigned:1;\n"
    "\tfield:int next_prio;\toffset:12;\tsize:4;\tsigned:1;\n"
    "\tfield:pid_t prev_pid;\toffset:16;\tsize:4;\tsigned:1;\n"
    "\tfield:int prev_prio;\toffset:20;\tsize:4;\tsigned:1;\n"
    "\tfield:char next_comm[8];\toffset:24;\tsize:8;\tsigned:0;\n"
    "\tfield:__rel_loc char[] prev_comm;\toffset:32;\tsize:4;\tsigned:0;\n"
    "\nprint fmt: \"\"\n";

void Put32(std::string* s, std::uint32_t v) { s->append(reinterpret_cast<const char*>(&v), 4); }
void Put64At(std::string* s, std::size_t at, std::uint64_t v) {
  std::memcpy(s->data() + at, &v, 8);
}

// One switch record in kMovedSwitch's layout, 40 bytes + "old\0" for prev_comm.
std::string MovedSwitchRecord(int pid, int next_pid) {
  std::string r(44, '\0');
  const std::uint16_t id = 7;
  std::memcpy(r.data(), &id, 2);
  std::memcpy(r.data() + 4, &pid, 4);
  std::memcpy(r.data() + 8, &next_pid, 4);
  const int next_prio = 9;
  std::memcpy(r.data() + 12, &next_prio, 4);
  std::memcpy(r.data() + 16, &pid, 4);
  const int prev_prio = 120;
  std::memcpy(r.data() + 20, &prev_prio, 4);
  std::memcpy(r.data() + 24, "newname!", 8);
  const std::uint32_t rel = 4u | (4u << 16);  // 4 bytes at 4 past the field's end (offset 40)
  std::memcpy(r.data() + 32, &rel, 4);
  std::memcpy(r.data() + 40, "old", 4);
  return r;
}

TEST(TraceRawTest, AnotherLayoutIsDecodedByItsOwnHeaderAndFormat) {
  Captured c = LoadCaptured();
  RingLayout layout = c.layout;
  std::string why;
  ASSERT_TRUE(ParseHeaderPage(kSmallHeaderPage, &layout, &why)) << why;
  EXPECT_EQ(layout.page_size, 2048);
  EventFormat f;
  ASSERT_TRUE(ParseEventFormat(kMovedSwitch, &f, &why)) << why;
  EventDecoder decoder;
  decoder.Add(f);
  // Records: a 44-byte switch (type_len 11) at +5 ns; a time extend of 2^27 + 3 ns; a padding
  // of 8 bytes (a discarded record) at +1 ns; an absolute stamp; a long record (type_len 0).
  std::string data;
  const std::string rec = MovedSwitchRecord(42, 43);
  Put32(&data, 11u | (5u << 5));
  data += rec;
  Put32(&data, 30u | (3u << 5));
  Put32(&data, 1);
  Put32(&data, 29u | (1u << 5));
  Put32(&data, 8);
  Put32(&data, 0);
  Put32(&data, 0u | (0u << 5));
  Put32(&data, 44 + 4);
  data += MovedSwitchRecord(44, 45);
  Put32(&data, 31u | (7u << 5));  // absolute: 7 + (2 << 27)
  Put32(&data, 2);
  Put32(&data, 11u | (1u << 5));
  data += rec;
  std::string page(12, '\0');
  Put64At(&page, 0, 1'000'000'000);
  const auto commit = static_cast<std::uint32_t>(data.size());
  std::memcpy(page.data() + 8, &commit, 4);
  page += data;
  page.resize(2048, '\0');
  std::vector<TraceEvent> events;
  PageInfo info;
  ASSERT_TRUE(WalkPage(
      layout, page, &info,
      [&](const RawRecord& r) {
        TraceEvent e;
        decoder.Decode(r, 3, &e);
        events.push_back(e);
      },
      &why))
      << why;
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].ts_ns, 1'000'000'005);
  EXPECT_EQ(events[0].type, EventType::kSchedSwitch);
  EXPECT_EQ(events[0].pid, 42);
  EXPECT_EQ(events[0].prev_pid, 42);
  EXPECT_EQ(events[0].next_pid, 43);
  EXPECT_EQ(events[0].next_prio, 9);
  EXPECT_EQ(events[0].next_comm, "newname!");
  EXPECT_EQ(events[0].prev_comm, "old");
  EXPECT_EQ(events[1].ts_ns, 1'000'000'005 + (1LL << 27) + 3 + 1);
  EXPECT_EQ(events[1].pid, 44);
  EXPECT_EQ(events[2].ts_ns, (2LL << 27) + 7 + 1);
  EXPECT_EQ(info.first_ns, events[0].ts_ns);
  EXPECT_EQ(info.last_ns, events[2].ts_ns);
  EXPECT_FALSE(info.missed);
}

TEST(TraceRawTest, DamagedPagesStopAtTheDamageWithAReasonAndNeverReadPastThePage) {
  const Captured c = LoadCaptured();
  const std::string pages = Fixture("pages.bin");
  const std::string page = pages.substr(4096, 4096);
  const auto walk = [&](std::string_view p, std::string* why) {
    PageInfo info;
    std::size_t n = 0;
    const bool ok = WalkPage(
        c.layout, p, &info,
        [&](const RawRecord& r) {
          EXPECT_GE(r.data.data(), p.data());
          EXPECT_LE(r.data.data() + r.data.size(), p.data() + p.size());
          TraceEvent e;
          c.decoder.Decode(r, 1, &e);
          ++n;
        },
        why);
    EXPECT_EQ(n, info.records);
    return ok;
  };
  std::string why;
  // Every truncation short of the commit: the commit then points past the bytes.
  std::uint32_t commit = 0;
  std::memcpy(&commit, page.data() + 8, 4);
  for (std::size_t len = 0; len < 16 + commit; len += 7) {
    why.clear();
    EXPECT_FALSE(walk(std::string_view(page).substr(0, len), &why)) << len;
    EXPECT_FALSE(why.empty());
  }
  // Random corruption of the data: any outcome but a crash or a read past the page (ASan).
  std::mt19937 rng(20);
  for (int i = 0; i < 2000; ++i) {
    std::string bad = page;
    for (int k = 0; k < 4; ++k) {
      bad[16 + rng() % (bad.size() - 16)] = static_cast<char>(rng());
    }
    const std::string copy(bad);  // exact size: ASan catches a read past it
    (void)walk(copy, &why);
  }
  // A commit beyond the page.
  std::string big = page;
  Put64At(&big, 8, 100000);
  EXPECT_FALSE(walk(big, &why));
  EXPECT_NE(why.find("beyond its data"), std::string::npos) << why;
}

}  // namespace
}  // namespace rtloop::explain::trace
