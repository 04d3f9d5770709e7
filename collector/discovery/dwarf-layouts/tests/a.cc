// Test fixture for dwarf-layouts: shapes seen in MySQL/MariaDB headers.
#include <atomic>
#include <cstdint>
namespace inno {
struct Base { long a; int b; };
struct Lock { int word; unsigned cline:13, is_block_lock:1; bool flag; };
struct Zip { void *data; uint32_t m_end:16, m_nonempty:1, n_blobs:12, ssize:3; std::atomic<uint32_t> fix; };
class Page : public Base {
public:
  static constexpr uint32_t READ_FIX = 0x80000000U, WRITE_FIX = 0xc0000000U;
  static constexpr int NEG = -5;
  enum state_t : uint8_t { S0 = 0, S1 = 200 };
  enum class kind : int64_t { K = -1, BIG = 0x7fffffffffffffffLL };
  Lock lock[4];
  union { Page *hash; struct { uint16_t used, free_off; }; };
  Zip zip;
  std::atomic<bool> m_open;
  int arr2[3][5];
  char flex[];
};
struct Sys { char pad[64]; Lock latch; struct { int x; Lock inner; } anon_named; Lock rsegs[8]; };
}
struct V : virtual inno::Base { int v; };
inno::Sys sys_obj;
inno::Sys *sys_ptr = &sys_obj;
V vobj;
struct odr_t { int x; };            // a.cc's ODR variant: 4 bytes
odr_t odr_a;
int use_a() { return sys_obj.latch.word + sys_ptr->rsegs[1].word + vobj.v + (int)inno::Page::state_t::S1 + (int)inno::Page::kind::K; }
static inno::Page page_inst;
int main() { return use_a() + (int)page_inst.zip.fix + inno::Page::NEG; }
// A dynamic class: GCC describes it in full only where its vtable is (here, the unit
// defining its key function); b.cc knows it only by declaration.
struct Hp { virtual ~Hp(); void *m_hp; };
Hp::~Hp() {}
struct Pool { long x; Hp hp; };
Pool pool_a;
