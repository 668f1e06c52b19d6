// udt4peer: a small test peer of our own on UDT 4.11's public API (Debian's libudt-dev), for the
// interop tests in conn/interop_*_test.go. It covers what the reference's stock programs do not:
// rendezvous connections and message mode (UDT_DGRAM) with TTLs. Built by .ci/udt4-ref.sh.
//
//   udt4peer listen <port> <stream|dgram>
//       accept one connection and receive until the peer closes
//   udt4peer connect <host> <port> <stream|dgram> <count> <maxsize> <ttl_ms> <seed>
//       connect and send <count> messages
//   udt4peer rendezvous <localport> <host> <port> <stream|dgram> <send|recv> <count> <maxsize> <ttl_ms> <seed>
//       rendezvous with host:port from localport, then send or receive
//
// Messages are generated as in conn's tests (genMessage): message i of seed s has size
// 1 + x % maxsize and bytes from xorshift64* seeded with s·1000003 + i; ttl_ms applies to the
// middle half of the messages, [count/4, 3·count/4) (−1: none), odd messages are sent in order.
// (The middle, because UDT 4.11 mis-numbers its packets when it gives up a message within two
// packets of the last one it sent, or before sending all of it: core.cpp packData's "skip all
// dropped packets" moves SndCurrSeqNo two past the message, so later packets leave under numbers
// that no longer match their send-buffer blocks; the first quarter lets the window grow first,
// and the tests keep the reference's TTL messages to one packet.) Output lines:
//   ready | connected | sent <i> <len> <fnv> | msg <len> <fnv> | stream <bytes> <fnv> | done | error <text>
// where <fnv> is the 64-bit FNV-1a hash of the message (or of the whole stream) in hex.
#include <arpa/inet.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <udt.h>

static uint64_t fnv(const char* p, int n, uint64_t h = 14695981039346656037ULL) {
   for (int i = 0; i < n; ++i) {
      h ^= (unsigned char)p[i];
      h *= 1099511628211ULL;
   }
   return h;
}

struct Rng {
   uint64_t s;
   explicit Rng(uint64_t seed) : s(seed ? seed : 1) {}
   uint64_t next() {
      s ^= s >> 12;
      s ^= s << 25;
      s ^= s >> 27;
      return s * 2685821657736338717ULL;
   }
};

static std::vector<char> genMessage(uint64_t seed, int i, int maxsize) {
   Rng r(seed * 1000003ULL + (uint64_t)i);
   int size = 1 + (int)(r.next() % (uint64_t)maxsize);
   std::vector<char> b(size);
   for (int k = 0; k < size; ++k) b[k] = (char)(r.next() >> 56);
   return b;
}

static void fail(const char* what) {
   printf("error %s: %s\n", what, UDT::getlasterror().getErrorMessage());
   fflush(stdout);
   exit(1);
}

static bool resolve(const char* host, const char* port, sockaddr_in* out) {
   addrinfo hints, *res;
   memset(&hints, 0, sizeof(hints));
   hints.ai_family = AF_INET;
   hints.ai_socktype = SOCK_DGRAM;
   if (getaddrinfo(host, port, &hints, &res) != 0) return false;
   memcpy(out, res->ai_addr, sizeof(*out));
   freeaddrinfo(res);
   return true;
}

static UDTSOCKET newSocket(const char* mode) {
   bool dgram = strcmp(mode, "dgram") == 0;
   UDTSOCKET u = UDT::socket(AF_INET, dgram ? SOCK_DGRAM : SOCK_STREAM, 0);
   if (u == UDT::INVALID_SOCK) fail("socket");
   return u;
}

static void receive(UDTSOCKET u, bool dgram, int maxsize) {
   std::vector<char> buf(maxsize > 0 ? maxsize + 1 : 1 << 20);
   uint64_t h = 14695981039346656037ULL;
   long long total = 0;
   for (;;) {
      int n = dgram ? UDT::recvmsg(u, &buf[0], (int)buf.size()) : UDT::recv(u, &buf[0], (int)buf.size(), 0);
      if (n == UDT::ERROR && dgram) {
         // A recvmsg blocked when the peer's Shutdown arrives fails even with messages left
         // (core.cpp: the wait loop stops on m_bBroken before it reads); a new call reads them.
         n = UDT::recvmsg(u, &buf[0], (int)buf.size());
      }
      if (n == UDT::ERROR) break;  // the peer closed (or the connection broke) and nothing is left
      if (dgram) {
         printf("msg %d %016llx\n", n, (unsigned long long)fnv(&buf[0], n));
      } else {
         h = fnv(&buf[0], n, h);
         total += n;
      }
      fflush(stdout);
   }
   if (!dgram) printf("stream %lld %016llx\n", total, (unsigned long long)h);
   printf("done\n");
   fflush(stdout);
}

static void sendAll(UDTSOCKET u, bool dgram, int count, int maxsize, int ttl, uint64_t seed) {
   for (int i = 0; i < count; ++i) {
      std::vector<char> m = genMessage(seed, i, maxsize);
      int n = (int)m.size();
      if (dgram) {
         int t = (i >= count / 4 && i < 3 * count / 4) ? ttl : -1;
         if (UDT::sendmsg(u, &m[0], n, t, i % 2 == 1) != n) fail("sendmsg");
      } else {
         for (int off = 0; off < n;) {
            int k = UDT::send(u, &m[off], n - off, 0);
            if (k == UDT::ERROR) fail("send");
            off += k;
         }
      }
      printf("sent %d %d %016llx\n", i, n, (unsigned long long)fnv(&m[0], n));
   }
   fflush(stdout);
}

int main(int argc, char** argv) {
   setvbuf(stdout, NULL, _IOLBF, 0);
   if (argc < 2) {
      fprintf(stderr, "usage: see the comment at the top of udt4peer.cpp\n");
      return 2;
   }
   UDT::startup();
   std::string cmd = argv[1];
   if (cmd == "listen" && argc == 4) {
      bool dgram = strcmp(argv[3], "dgram") == 0;
      UDTSOCKET s = newSocket(argv[3]);
      sockaddr_in a;
      memset(&a, 0, sizeof(a));
      a.sin_family = AF_INET;
      a.sin_port = htons(atoi(argv[2]));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (UDT::bind(s, (sockaddr*)&a, sizeof(a)) == UDT::ERROR) fail("bind");
      if (UDT::listen(s, 10) == UDT::ERROR) fail("listen");
      printf("ready\n");
      sockaddr_in peer;
      int len = sizeof(peer);
      UDTSOCKET u = UDT::accept(s, (sockaddr*)&peer, &len);
      if (u == UDT::INVALID_SOCK) fail("accept");
      printf("connected\n");
      receive(u, dgram, 0);
      UDT::close(u);
      UDT::close(s);
   } else if (cmd == "connect" && argc == 9) {
      bool dgram = strcmp(argv[4], "dgram") == 0;
      UDTSOCKET u = newSocket(argv[4]);
      sockaddr_in peer;
      if (!resolve(argv[2], argv[3], &peer)) fail("resolve");
      if (UDT::connect(u, (sockaddr*)&peer, sizeof(peer)) == UDT::ERROR) fail("connect");
      printf("connected\n");
      sendAll(u, dgram, atoi(argv[5]), atoi(argv[6]), atoi(argv[7]), strtoull(argv[8], NULL, 10));
      UDT::close(u);  // lingers until the data is acknowledged (UDT_LINGER)
      printf("done\n");
   } else if (cmd == "rendezvous" && argc == 11) {
      bool dgram = strcmp(argv[5], "dgram") == 0;
      UDTSOCKET u = newSocket(argv[5]);
      bool yes = true;
      UDT::setsockopt(u, 0, UDT_RENDEZVOUS, &yes, sizeof(yes));
      sockaddr_in a;
      memset(&a, 0, sizeof(a));
      a.sin_family = AF_INET;
      a.sin_port = htons(atoi(argv[2]));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      if (UDT::bind(u, (sockaddr*)&a, sizeof(a)) == UDT::ERROR) fail("bind");
      sockaddr_in peer;
      if (!resolve(argv[3], argv[4], &peer)) fail("resolve");
      printf("ready\n");
      if (UDT::connect(u, (sockaddr*)&peer, sizeof(peer)) == UDT::ERROR) fail("connect");
      printf("connected\n");
      int count = atoi(argv[7]), maxsize = atoi(argv[8]), ttl = atoi(argv[9]);
      if (strcmp(argv[6], "send") == 0) {
         sendAll(u, dgram, count, maxsize, ttl, strtoull(argv[10], NULL, 10));
         UDT::close(u);
         printf("done\n");
      } else {
         receive(u, dgram, maxsize);
         UDT::close(u);
      }
   } else {
      fprintf(stderr, "udt4peer: bad arguments\n");
      return 2;
   }
   UDT::cleanup();
   return 0;
}
