#include <atomic>
#include <cstdint>
struct odr_t { long x; long y; };   // b.cc's ODR variant: 16 bytes
odr_t odr_b;
namespace inno { struct Base { long a; int b; }; }
inno::Base base_b;
struct Hp { virtual ~Hp(); void *m_hp; };
struct Pool { long x; Hp hp; };
Pool pool_b;
