#include "clustertwin/report/progress.h"

#include <gtest/gtest.h>

#include <sstream>

namespace clustertwin::report {
namespace {

using namespace std::chrono_literals;

struct FakeClock {
  std::chrono::steady_clock::time_point now{};
  Progress::Clock fn() {
    return [this] { return now; };
  }
};

TEST(Progress, EnabledOnlyOnATerminalOutsideCiAndNotQuiet) {
  EXPECT_TRUE(progress_enabled(true, nullptr, false));
  EXPECT_TRUE(progress_enabled(true, "", false));
  EXPECT_TRUE(progress_enabled(true, "false", false));
  EXPECT_FALSE(progress_enabled(true, "true", false));
  EXPECT_FALSE(progress_enabled(true, "1", false));
  EXPECT_FALSE(progress_enabled(false, nullptr, false));
  EXPECT_FALSE(progress_enabled(true, nullptr, true));
}

TEST(Progress, SilentWhenDisabled) {
  std::ostringstream out;
  FakeClock clock;
  {
    Progress bar(out, false, "search", 10, clock.fn());
    for (int i = 0; i < 10; ++i) {
      clock.now += 1s;
      bar.advance();
    }
    EXPECT_EQ(bar.done(), 10);
  }
  EXPECT_EQ(out.str(), "");
}

TEST(Progress, ThrottlesToTenHertzAndClearsItsLine) {
  std::ostringstream out;
  FakeClock clock;
  Progress bar(out, true, "search", 1000, clock.fn());
  for (int i = 0; i < 500; ++i) bar.advance();  // no time passes: only the first one draws
  EXPECT_NE(out.str().find(" 1/1000 "), std::string::npos);
  EXPECT_EQ(out.str().find("500/1000"), std::string::npos);
  const auto draws = [&] {
    size_t n = 0;
    for (size_t at = out.str().find('\r'); at != std::string::npos;
         at = out.str().find('\r', at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(draws(), 1u);
  clock.now += 50ms;
  bar.advance();
  EXPECT_EQ(draws(), 1u);
  clock.now += 60ms;
  bar.advance();
  EXPECT_EQ(draws(), 2u);
  bar.finish();
  bar.finish();
  EXPECT_EQ(draws(), 3u);
  EXPECT_EQ(out.str().substr(out.str().size() - 5), "\r\033[2K");
}

TEST(Progress, LineShowsPercentCountAndEta) {
  std::ostringstream out;
  FakeClock clock;
  Progress bar(out, false, "layouts", 100, clock.fn());
  EXPECT_EQ(bar.line(), "layouts [............................]   0%  0/100  ETA --");
  clock.now += 10s;
  bar.set(25);  // 10 s for 25: 30 s to go
  EXPECT_EQ(bar.line(), "layouts [#######.....................]  25%  25/100  ETA 30s");
}

TEST(Progress, FormatsEta) {
  EXPECT_EQ(format_eta(0.84), "0.8s");
  EXPECT_EQ(format_eta(42.4), "42s");
  EXPECT_EQ(format_eta(185), "3m05s");
  EXPECT_EQ(format_eta(3720), "1h02m");
  EXPECT_EQ(format_eta(-1), "--");
}

}  // namespace
}  // namespace clustertwin::report
