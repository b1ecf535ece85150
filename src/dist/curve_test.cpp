// Tests of CURVE for the distributed sockets, on real ZeroMQ sockets over 127.0.0.1: members of
// the cluster (the key file's pair) talk; a client with another pair, with another cluster's key,
// or without CURVE gets nothing through in either direction, and the ZAP handler says it denied
// it; the key file is written atomically with mode 0600, never over an existing file, and read
// back to the same keys; unsafe modes, missing files and malformed content are refused, naming
// the file (and line).
#include "dist/curve.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "dist/route.h"

namespace ds4::dist {
namespace {

// How long a peer that should get nothing is listened to: CURVE handshakes on loopback take a
// few ms, so this is ample, and it bounds each negative test well under 2 s.
constexpr int kSilenceMs = 300;
// How long the ZAP handler may take to record a handshake it answered.
constexpr auto kZapDeadline = std::chrono::milliseconds(1500);

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ds4-curve-XXXXXX").string();
    EXPECT_NE(mkdtemp(tmpl.data()), nullptr) << tmpl;
    path_ = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  size_t entries() const {
    return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(path_),
                                             std::filesystem::directory_iterator()));
  }

 private:
  std::filesystem::path path_;
};

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_text(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream(path) << text;
  ASSERT_EQ(chmod(path.c_str(), mode), 0);
}

ClusterKey new_key(const TempDir& dir, const std::string& name) {
  const std::string path = dir.file(name);
  EXPECT_TRUE(write_cluster_key(path).is_ok());
  auto key = load_cluster_key(path);
  EXPECT_TRUE(key.is_ok()) << key.status().message();
  return key.is_ok() ? *key : ClusterKey{};
}

// A key pair that is not the cluster's.
ClusterKey other_pair() {
  char pub[kCurveKeyZ85Chars + 1], sec[kCurveKeyZ85Chars + 1];
  EXPECT_EQ(zmq_curve_keypair(pub, sec), 0);
  ClusterKey k;
  zmq_z85_decode(k.public_key.data(), pub);
  zmq_z85_decode(k.secret_key.data(), sec);
  return k;
}

bool wait_for(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + kZapDeadline;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// A ROUTER server like the coordinator's control socket, CURVE with the cluster key.
struct Server {
  zmq::context_t context{1};
  std::unique_ptr<CurveAuthenticator> auth;
  zmq::socket_t socket{context, zmq::socket_type::router};
  std::string endpoint;

  // curve: a CURVE server; else NULL with ZAP (a domain set), which the handler must deny.
  Server(const ClusterKey& key, bool curve) {
    auto a = CurveAuthenticator::start(context, key);
    EXPECT_TRUE(a.is_ok()) << a.status().message();
    if (a.is_ok()) auth = std::move(*a);
    socket.set(zmq::sockopt::linger, 0);
    socket.set(zmq::sockopt::rcvtimeo, kSilenceMs);
    if (curve) {
      secure_server(socket, key);
    } else {
      socket.set(zmq::sockopt::zap_domain, kZapDomain);
    }
    socket.bind("tcp://127.0.0.1:0");
    endpoint = socket.get(zmq::sockopt::last_endpoint);
  }
  ~Server() {
    socket.close();
    auth.reset();  // before the context
  }
};

zmq::socket_t dealer(zmq::context_t& context) {
  zmq::socket_t s(context, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::rcvtimeo, kSilenceMs);
  return s;
}

// Sends from `client` and checks that the server receives nothing and that a server's message
// does not reach the client either.
void expect_nothing_through(Server& server, zmq::socket_t& client) {
  client.connect(server.endpoint);
  ASSERT_TRUE(client.send(zmq::str_buffer("secret work"), zmq::send_flags::dontwait));
  zmq::message_t msg;
  EXPECT_FALSE(server.socket.recv(msg)) << "the server received '" << msg.to_string() << "'";
  EXPECT_FALSE(client.recv(msg)) << "the client received '" << msg.to_string() << "'";
}

TEST(CurveKeyFile, WriteThenLoadRoundTrips) {
  TempDir dir;
  const std::string path = dir.file("cluster.key");
  ASSERT_TRUE(write_cluster_key(path).is_ok());
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(dir.entries(), 1u) << "the temporary file is left behind";

  auto key = load_cluster_key(path);
  ASSERT_TRUE(key.is_ok()) << key.status().message();
  const std::string text = read_text(path);
  EXPECT_NE(text.find("\npublic " + key->public_z85() + "\n"), std::string::npos) << text;
  char secret[kCurveKeyZ85Chars + 1] = {};
  zmq_z85_encode(secret, key->secret_key.data(), kCurveKeyBytes);
  EXPECT_NE(text.find("\nsecret " + std::string(secret) + "\n"), std::string::npos);

  // The keys round-trip through the format (comments and blank lines aside, either order).
  const std::string again = dir.file("again.key");
  write_text(again, "\nsecret " + std::string(secret) + "\n# c\npublic " + key->public_z85(), 0600);
  auto key2 = load_cluster_key(again);
  ASSERT_TRUE(key2.is_ok()) << key2.status().message();
  EXPECT_EQ(key2->public_key, key->public_key);
  EXPECT_EQ(key2->secret_key, key->secret_key);

  // Two keys written are two different pairs.
  const ClusterKey third = new_key(dir, "third.key");
  EXPECT_NE(third.public_key, key->public_key);
}

TEST(CurveKeyFile, WriteRefusesAnExistingFile) {
  TempDir dir;
  const std::string path = dir.file("cluster.key");
  ASSERT_TRUE(write_cluster_key(path).is_ok());
  const std::string before = read_text(path);
  const Status st = write_cluster_key(path);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find(path), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("exists"), std::string::npos) << st.message();
  EXPECT_EQ(read_text(path), before);
  EXPECT_EQ(dir.entries(), 1u);
  EXPECT_FALSE(write_cluster_key(dir.file("no-such-dir/cluster.key")).is_ok());
}

TEST(CurveKeyFile, LoadRefusesAFileOthersMayRead) {
  TempDir dir;
  const std::string path = dir.file("cluster.key");
  ASSERT_TRUE(write_cluster_key(path).is_ok());
  for (mode_t mode : {0644, 0640, 0604, 0620, 0660}) {
    ASSERT_EQ(chmod(path.c_str(), mode), 0);
    auto key = load_cluster_key(path);
    ASSERT_FALSE(key.is_ok()) << std::oct << mode;
    EXPECT_NE(key.status().message().find(path), std::string::npos) << key.status().message();
    EXPECT_NE(key.status().message().find("chmod 600"), std::string::npos)
        << key.status().message();
  }
  ASSERT_EQ(chmod(path.c_str(), 0400), 0);  // read-only for its owner is fine
  EXPECT_TRUE(load_cluster_key(path).is_ok());
}

TEST(CurveKeyFile, LoadRefusesAMissingFile) {
  TempDir dir;
  const std::string path = dir.file("absent.key");
  auto key = load_cluster_key(path);
  ASSERT_FALSE(key.is_ok());
  EXPECT_NE(key.status().message().find(path), std::string::npos) << key.status().message();
  EXPECT_FALSE(load_cluster_key(dir.file("")).is_ok());  // a folder
  const std::string fifo = dir.file("fifo.key");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto from_fifo = load_cluster_key(fifo);  // refused at once, without waiting for a writer
  ASSERT_FALSE(from_fifo.is_ok());
  EXPECT_NE(from_fifo.status().message().find("not a regular file"), std::string::npos);
}

TEST(CurveKeyFile, LoadRefusesMalformedContentNamingTheLine) {
  TempDir dir;
  const std::string good = dir.file("good.key");
  ASSERT_TRUE(write_cluster_key(good).is_ok());
  auto key = load_cluster_key(good);
  ASSERT_TRUE(key.is_ok());
  const std::string pub = "public " + key->public_z85();
  char z85[kCurveKeyZ85Chars + 1] = {};
  zmq_z85_encode(z85, key->secret_key.data(), kCurveKeyBytes);
  const std::string sec = "secret " + std::string(z85);
  const std::string other_pub =
      "public " + ClusterKey{.public_key = other_pair().public_key}.public_z85();

  struct Case {
    std::string text, expect;
  };
  const Case cases[] = {
      {"garbage\n", "line 1"},
      {pub + "\n" + sec + "\nextra words\n", "line 3"},
      {pub + "\n\x01\x02\xff binary\n", "line 2"},
      {pub + "\n" + pub + "\n" + sec + "\n", "line 2: a second 'public'"},
      {"# comment\npublic tooShort\n" + sec + "\n", "line 2"},
      {pub + "\nsecret " + std::string(40, '"') + "\n", "line 2"},  // '"' is not Z85
      {pub + "\n" + sec + " \n", "line 2"},                         // trailing blank
      {pub + "\n", "no 'secret' line"},
      {"", "no 'public' line"},
      {other_pub + "\n" + sec + "\n", "not the secret key's"},
      {std::string(5000, '#'), "larger than"},
  };
  for (const Case& c : cases) {
    const std::string path = dir.file("bad.key");
    std::filesystem::remove(path);
    write_text(path, c.text, 0600);
    auto bad = load_cluster_key(path);
    ASSERT_FALSE(bad.is_ok()) << c.text;
    EXPECT_NE(bad.status().message().find(path), std::string::npos) << bad.status().message();
    EXPECT_NE(bad.status().message().find(c.expect), std::string::npos)
        << bad.status().message() << " (expected '" << c.expect << "')";
  }
}

TEST(Curve, ClusterMembersExchangeMessages) {
  TempDir dir;
  const ClusterKey key = new_key(dir, "cluster.key");
  Server server(key, true);
  zmq::socket_t client = dealer(server.context);
  secure_client(client, key);
  client.connect(server.endpoint);
  ASSERT_TRUE(client.send(zmq::str_buffer("hello"), zmq::send_flags::none));
  zmq::message_t identity, body;
  ASSERT_TRUE(server.socket.recv(identity));
  ASSERT_TRUE(server.socket.recv(body));
  EXPECT_EQ(body.to_string(), "hello");
  ASSERT_TRUE(server.socket.send(identity, zmq::send_flags::sndmore));
  ASSERT_TRUE(server.socket.send(zmq::str_buffer("welcome"), zmq::send_flags::none));
  zmq::message_t answer;
  ASSERT_TRUE(client.recv(answer));
  EXPECT_EQ(answer.to_string(), "welcome");
  EXPECT_EQ(server.auth->accepted(), 1u);
  EXPECT_EQ(server.auth->denied(), 0u);

  // The worker's data path: a CURVE PULL served by the same context's authenticator, a PUSH in.
  zmq::socket_t pull(server.context, zmq::socket_type::pull);
  pull.set(zmq::sockopt::linger, 0);
  pull.set(zmq::sockopt::rcvtimeo, 1000);
  secure_server(pull, key);
  pull.bind("tcp://127.0.0.1:0");
  zmq::socket_t push(server.context, zmq::socket_type::push);
  push.set(zmq::sockopt::linger, 0);
  secure_client(push, key);
  push.connect(pull.get(zmq::sockopt::last_endpoint));
  ASSERT_TRUE(push.send(zmq::str_buffer("span"), zmq::send_flags::none));
  zmq::message_t span;
  ASSERT_TRUE(pull.recv(span));
  EXPECT_EQ(span.to_string(), "span");
  EXPECT_EQ(server.auth->accepted(), 2u);
}

TEST(Curve, ClientWithAnotherKeypairGetsNothingThrough) {
  // It knows the server's key (the cluster's public key) but presents a pair of its own: the
  // CURVE handshake would succeed, and the ZAP handler refuses it.
  TempDir dir;
  const ClusterKey key = new_key(dir, "cluster.key");
  Server server(key, true);
  const ClusterKey mine = other_pair();
  zmq::socket_t client = dealer(server.context);
  client.set(zmq::sockopt::curve_serverkey, zmq::buffer(key.public_key));
  client.set(zmq::sockopt::curve_publickey, zmq::buffer(mine.public_key));
  client.set(zmq::sockopt::curve_secretkey, zmq::buffer(mine.secret_key));
  expect_nothing_through(server, client);
  EXPECT_TRUE(wait_for([&] { return server.auth->denied() >= 1; }));
  EXPECT_EQ(server.auth->accepted(), 0u);
}

TEST(Curve, ClientOfAnotherClusterGetsNothingThrough) {
  // Another cluster's key file: it does not even know the server's key.
  TempDir dir;
  const ClusterKey key = new_key(dir, "cluster.key");
  const ClusterKey theirs = new_key(dir, "theirs.key");
  Server server(key, true);
  zmq::socket_t client = dealer(server.context);
  secure_client(client, theirs);
  expect_nothing_through(server, client);
  EXPECT_EQ(server.auth->accepted(), 0u);
}

TEST(Curve, PlainClientGetsNothingThrough) {
  TempDir dir;
  const ClusterKey key = new_key(dir, "cluster.key");
  Server server(key, true);
  zmq::socket_t client = dealer(server.context);  // the NULL mechanism
  expect_nothing_through(server, client);
  EXPECT_EQ(server.auth->accepted(), 0u);
}

TEST(Curve, AuthenticatorDeniesTheNullMechanism) {
  // A server socket without CURVE but with ZAP on: the handler is asked, and says no.
  TempDir dir;
  const ClusterKey key = new_key(dir, "cluster.key");
  Server server(key, false);
  zmq::socket_t client = dealer(server.context);
  expect_nothing_through(server, client);
  EXPECT_TRUE(wait_for([&] { return server.auth->denied() >= 1; }));
  EXPECT_EQ(server.auth->accepted(), 0u);
}

TEST(Curve, OneAuthenticatorPerContext) {
  TempDir dir;
  const ClusterKey key = new_key(dir, "cluster.key");
  zmq::context_t context{1};
  auto first = CurveAuthenticator::start(context, key);
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  auto second = CurveAuthenticator::start(context, key);
  ASSERT_FALSE(second.is_ok());
  EXPECT_NE(second.status().message().find("inproc://zeromq.zap.01"), std::string::npos)
      << second.status().message();
  const auto t0 = std::chrono::steady_clock::now();
  first->reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1000));
  EXPECT_TRUE(CurveAuthenticator::start(context, key).is_ok());  // the address is free again
}

TEST(Curve, LoopbackEndpoints) {
  for (const char* e : {"tcp://127.0.0.1:7000", "127.0.0.1:0", "tcp://127.1.2.3:1", "localhost:5",
                        "tcp://[::1]:7000", "[::ffff:127.0.0.1]:9"}) {
    EXPECT_TRUE(is_loopback_endpoint(e)) << e;
  }
  for (const char* e : {"tcp://10.0.0.1:7000", "0.0.0.0:7000", "tcp://*:7000", "tcp://[::]:1",
                        "127.example.com:80", "host:1", "127.0.0.1", "tcp://lo:7000", ""}) {
    EXPECT_FALSE(is_loopback_endpoint(e)) << e;
  }
}

}  // namespace
}  // namespace ds4::dist
