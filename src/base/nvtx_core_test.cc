// The NVTX injection core (nvtx_core.h) driven through synthetic NVTX tables: a fake export
// table hands Install() function tables of the sizes real NVTX uses; the tests then call the
// installed entry points as the NVTX client would, with synthetic attributes, and check what
// a recording Tool was told. No NVTX library and no GPU involved.
#include "base/nvtx_core.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace opscope::nvtx {
namespace {

// What the Tool saw, one line per call.
class RecordingTool : public Tool {
 public:
  std::vector<std::string> calls;
  std::vector<std::string> registered{""};  // id 0 unused
  uint32_t next_domain = 7;

  std::string Text(const Name& n) const {
    if (n.registered != 0)
      return "reg:" + (n.registered < registered.size() ? registered[n.registered] : "?");
    return n.text ? std::string(n.text, n.length) : "<none>";
  }
  uint32_t CreateDomain(const Name& n) override {
    calls.push_back("domain " + Text(n));
    return next_domain++;
  }
  uint32_t RegisterString(uint32_t domain, const Name& n) override {
    calls.push_back("register " + std::to_string(domain) + " " + Text(n));
    registered.push_back(Text(n));
    return static_cast<uint32_t>(registered.size() - 1);
  }
  void Push(uint32_t domain, const Event& e) override {
    calls.push_back("push " + std::to_string(domain) + " " + Text(e.name) + " cat " +
                    std::to_string(e.category));
  }
  void Pop(uint32_t domain) override { calls.push_back("pop " + std::to_string(domain)); }
  uint64_t Start(uint32_t domain, const Event& e) override {
    calls.push_back("start " + std::to_string(domain) + " " + Text(e.name));
    return 1000 + calls.size();
  }
  void End(uint32_t domain, uint64_t id) override {
    calls.push_back("end " + std::to_string(domain) + " " + std::to_string(id));
  }
  void Mark(uint32_t domain, const Event& e) override {
    calls.push_back("mark " + std::to_string(domain) + " " + Text(e.name));
  }
  void NameThread(uint32_t tid, const Name& n) override {
    calls.push_back("thread " + std::to_string(tid) + " " + Text(n));
  }
  void NameCategory(uint32_t domain, uint32_t category, const Name& n) override {
    calls.push_back("category " + std::to_string(domain) + " " + std::to_string(category) + " " +
                    Text(n));
  }
};

// The tables as NVTX keeps them: SIZE + 1 slots, size reported as SIZE.
NvtxFunctionPointer g_core[NVTX_CBID_CORE_SIZE + 1];
NvtxFunctionPointer g_core2[NVTX_CBID_CORE2_SIZE + 1];
NvtxFunctionPointer* g_core_table[NVTX_CBID_CORE_SIZE + 1];
NvtxFunctionPointer* g_core2_table[NVTX_CBID_CORE2_SIZE + 1];
bool g_offer_core2 = true;

int NVTX_API GetModuleFunctionTable(NvtxCallbackModule module, NvtxFunctionTable* out,
                                    unsigned int* size) {
  if (module == NVTX_CB_MODULE_CORE) {
    *out = g_core_table;
    *size = NVTX_CBID_CORE_SIZE;
    return 1;
  }
  if (module == NVTX_CB_MODULE_CORE2 && g_offer_core2) {
    *out = g_core2_table;
    *size = NVTX_CBID_CORE2_SIZE;
    return 1;
  }
  return 0;
}
const NvtxExportTableCallbacks g_callbacks = {sizeof(NvtxExportTableCallbacks),
                                              GetModuleFunctionTable};
const void* NVTX_API GetExportTable(uint32_t id) {
  return id == NVTX_ETID_CALLBACKS ? &g_callbacks : nullptr;
}
const void* NVTX_API NoExportTable(uint32_t) { return nullptr; }

template <typename Fn>
Fn Slot(NvtxFunctionPointer* table, int id) {
  return reinterpret_cast<Fn>(table[id]);
}

class NvtxCoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i <= NVTX_CBID_CORE_SIZE; ++i) {
      g_core[i] = nullptr;
      g_core_table[i] = i == NVTX_CBID_CORE_SIZE ? nullptr : &g_core[i];
    }
    for (int i = 0; i <= NVTX_CBID_CORE2_SIZE; ++i) {
      g_core2[i] = nullptr;
      g_core2_table[i] = i == NVTX_CBID_CORE2_SIZE ? nullptr : &g_core2[i];
    }
    g_offer_core2 = true;
    const char* why = "";
    ASSERT_TRUE(Install(GetExportTable, &tool_, &why)) << why;
    // The level is per thread: close what an earlier test left open.
    auto pop = Slot<int(NVTX_API*)()>(g_core, NVTX_CBID_CORE_RangePop);
    while (pop() >= 0) {
    }
    tool_.calls.clear();
  }
  RecordingTool tool_;
};

nvtxEventAttributes_t Attr(int type) {
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = type;
  return a;
}

TEST_F(NvtxCoreTest, EveryCoreAndCore2EntryIsInstalledAndNothingPastTheSize) {
  for (int i = 1; i < NVTX_CBID_CORE_SIZE; ++i) EXPECT_NE(g_core[i], nullptr) << "core " << i;
  for (int i = 1; i < NVTX_CBID_CORE2_SIZE; ++i) {
    if (i == NVTX_CBID_CORE2_DomainResourceCreate || i == NVTX_CBID_CORE2_DomainResourceDestroy)
      continue;  // resources are not recorded
    EXPECT_NE(g_core2[i], nullptr) << "core2 " << i;
  }
  EXPECT_EQ(g_core[0], nullptr);
  EXPECT_EQ(g_core[NVTX_CBID_CORE_SIZE], nullptr);
}

TEST_F(NvtxCoreTest, PushPopReturnTheLevelPerThread) {
  auto push_a = Slot<int(NVTX_API*)(const char*)>(g_core, NVTX_CBID_CORE_RangePushA);
  auto pop = Slot<int(NVTX_API*)()>(g_core, NVTX_CBID_CORE_RangePop);
  EXPECT_EQ(push_a("outer"), 0);
  EXPECT_EQ(push_a("inner"), 1);
  EXPECT_EQ(pop(), 1);
  EXPECT_EQ(pop(), 0);
  EXPECT_EQ(pop(), -1) << "nothing open";
  EXPECT_EQ(tool_.calls, (std::vector<std::string>{"push 0 outer cat 0", "push 0 inner cat 0",
                                                   "pop 0", "pop 0", "pop 0"}));
}

TEST_F(NvtxCoreTest, WideStringsBecomeUtf8) {
  auto push_w = Slot<int(NVTX_API*)(const wchar_t*)>(g_core, NVTX_CBID_CORE_RangePushW);
  push_w(L"caf\u00e9 \u6df1\u5ea6 \U0001F680");
  const wchar_t bad[] = {L'a', static_cast<wchar_t>(0xD800), static_cast<wchar_t>(0x110000), 0};
  push_w(bad);
  push_w(nullptr);
  ASSERT_EQ(tool_.calls.size(), 3u);
  EXPECT_EQ(tool_.calls[0], "push 0 caf\xc3\xa9 \xe6\xb7\xb1\xe5\xba\xa6 \xf0\x9f\x9a\x80 cat 0");
  EXPECT_EQ(tool_.calls[1], "push 0 a?? cat 0");
  EXPECT_EQ(tool_.calls[2], "push 0 <none> cat 0");
}

TEST_F(NvtxCoreTest, LongNamesAreCutOnACharacterBoundary) {
  char buf[kMaxName + 1];
  std::string ascii(kMaxName + 50, 'x');
  Name n = AsciiName(ascii.c_str(), buf);
  EXPECT_EQ(n.length, kMaxName);
  EXPECT_EQ(n.text[n.length], '\0');
  std::string short_name = "short";
  n = AsciiName(short_name.c_str(), buf);
  EXPECT_EQ(n.text, short_name.c_str()) << "not copied when it fits";
  // kMaxName - 1 ASCII bytes then a 2-byte character: it does not fit and is left out whole.
  std::wstring wide(kMaxName - 1, L'y');
  wide += L"\u00e9\u00e9";
  n = WideName(wide.c_str(), buf);
  EXPECT_EQ(n.length, kMaxName - 1);
  std::string utf8(kMaxName - 1, 'y');
  utf8 += "\xc3\xa9\xc3\xa9";
  n = AsciiName(utf8.c_str(), buf);
  EXPECT_EQ(n.length, kMaxName - 1) << "a UTF-8 sequence is not cut in half";
}

TEST_F(NvtxCoreTest, DomainsAndRegisteredStringsRoundTripThroughHandles) {
  auto create =
      Slot<nvtxDomainHandle_t(NVTX_API*)(const char*)>(g_core2, NVTX_CBID_CORE2_DomainCreateA);
  auto reg = Slot<nvtxStringHandle_t(NVTX_API*)(nvtxDomainHandle_t, const char*)>(
      g_core2, NVTX_CBID_CORE2_DomainRegisterStringA);
  auto push_ex = Slot<int(NVTX_API*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*)>(
      g_core2, NVTX_CBID_CORE2_DomainRangePushEx);
  auto pop = Slot<int(NVTX_API*)(nvtxDomainHandle_t)>(g_core2, NVTX_CBID_CORE2_DomainRangePop);
  nvtxDomainHandle_t camera = create("camera");
  ASSERT_NE(camera, nullptr);
  EXPECT_EQ(DecodeHandle(camera), 7u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(camera) & 0xF, 0x8u) << "never a pointer to read";
  nvtxStringHandle_t decode = reg(camera, "decode");
  nvtxEventAttributes_t a = Attr(NVTX_MESSAGE_TYPE_REGISTERED);
  a.message.registered = decode;
  a.category = 3;
  EXPECT_EQ(push_ex(camera, &a), 0);
  EXPECT_EQ(pop(camera), 0);
  EXPECT_EQ(push_ex(nullptr, &a), 0) << "the null domain is the default one";
  EXPECT_EQ(tool_.calls, (std::vector<std::string>{"domain camera", "register 7 decode",
                                                   "push 7 reg:decode cat 3", "pop 7",
                                                   "push 0 reg:decode cat 3"}));
}

TEST_F(NvtxCoreTest, AttributesAreReadOnlyWithinTheirSize) {
  auto push_ex =
      Slot<int(NVTX_API*)(const nvtxEventAttributes_t*)>(g_core, NVTX_CBID_CORE_RangePushEx);
  nvtxEventAttributes_t a = Attr(NVTX_MESSAGE_TYPE_ASCII);
  a.message.ascii = "full";
  a.category = 9;
  push_ex(&a);
  a.size = offsetof(nvtxEventAttributes_t, message);  // too small to hold the message
  push_ex(&a);
  a.size = offsetof(nvtxEventAttributes_t, category);  // nothing but version and size
  push_ex(&a);
  nvtxEventAttributes_t w = Attr(NVTX_MESSAGE_TYPE_UNICODE);
  w.message.unicode = L"wide";
  push_ex(&w);
  nvtxEventAttributes_t unknown = Attr(42);
  unknown.message.ascii = "never read";
  push_ex(&unknown);
  push_ex(nullptr);
  EXPECT_EQ(tool_.calls, (std::vector<std::string>{"push 0 full cat 9", "push 0 <none> cat 9",
                                                   "push 0 <none> cat 0", "push 0 wide cat 0",
                                                   "push 0 <none> cat 0", "push 0 <none> cat 0"}));
}

TEST_F(NvtxCoreTest, StartEndMarksThreadsAndCategories) {
  auto start_a = Slot<nvtxRangeId_t(NVTX_API*)(const char*)>(g_core, NVTX_CBID_CORE_RangeStartA);
  auto end = Slot<void(NVTX_API*)(nvtxRangeId_t)>(g_core, NVTX_CBID_CORE_RangeEnd);
  auto dstart = Slot<nvtxRangeId_t(NVTX_API*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*)>(
      g_core2, NVTX_CBID_CORE2_DomainRangeStartEx);
  auto dend = Slot<void(NVTX_API*)(nvtxDomainHandle_t, nvtxRangeId_t)>(
      g_core2, NVTX_CBID_CORE2_DomainRangeEnd);
  auto mark_a = Slot<void(NVTX_API*)(const char*)>(g_core, NVTX_CBID_CORE_MarkA);
  auto thread_a =
      Slot<void(NVTX_API*)(uint32_t, const char*)>(g_core, NVTX_CBID_CORE_NameOsThreadA);
  auto cat_w =
      Slot<void(NVTX_API*)(uint32_t, const wchar_t*)>(g_core, NVTX_CBID_CORE_NameCategoryW);
  const nvtxRangeId_t id = start_a("whole");
  end(id);
  nvtxEventAttributes_t a = Attr(NVTX_MESSAGE_TYPE_ASCII);
  a.message.ascii = "load";
  const auto dom = reinterpret_cast<nvtxDomainHandle_t>(EncodeHandle(12));
  dend(dom, dstart(dom, &a));
  mark_a("tick");
  thread_a(4242, "worker");
  cat_w(5, L"io");
  EXPECT_EQ(tool_.calls,
            (std::vector<std::string>{"start 0 whole", "end 0 1001", "start 12 load", "end 12 1003",
                                      "mark 0 tick", "thread 4242 worker", "category 0 5 io"}));
}

TEST(NvtxCoreInstall, RefusesAnNvtxWithoutTables) {
  RecordingTool tool;
  const char* why = "";
  EXPECT_FALSE(Install(NoExportTable, &tool, &why));
  EXPECT_STREQ(why, "this NVTX version offers no callback table");
  EXPECT_FALSE(Install(nullptr, &tool, &why));
  g_offer_core2 = false;  // CORE alone is enough
  for (int i = 0; i < NVTX_CBID_CORE_SIZE; ++i) g_core_table[i] = &g_core[i];
  EXPECT_TRUE(Install(GetExportTable, &tool, &why));
}

}  // namespace
}  // namespace opscope::nvtx
