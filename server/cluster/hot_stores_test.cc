// HotStores: a shard's hot list from the uses of its stores and the previous holder's list.
#include "server/cluster/hot_stores.h"

#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace adaptd::cluster {
namespace {

using List = std::vector<std::string>;

TEST(HotListValue, EncodesNamesOneALineAndDecodesThemBack) {
  const List keys = {"acme/a", "acme/b-1", "other/x.y"};
  EXPECT_EQ(EncodeHotList(keys), "acme/a\nacme/b-1\nother/x.y");
  EXPECT_EQ(DecodeHotList(EncodeHotList(keys)), keys);
  EXPECT_TRUE(DecodeHotList("").empty());
  EXPECT_EQ(DecodeHotList("acme/a\n\nacme/b\n"), (List{"acme/a", "acme/b"}));
}

TEST(HotStores, NothingIsWrittenBeforeThePreviousListIsKnown) {
  HotStores hot;
  hot.Adopted(3, 100);
  EXPECT_EQ(hot.Changed(3, {{"t/a", 200}}), std::nullopt);
  EXPECT_EQ(hot.Changed(4, {{"t/a", 200}}), std::nullopt);  // not served here
  hot.Inherit(3, {});
  EXPECT_EQ(hot.Changed(3, {{"t/a", 200}}), List{"t/a"});
}

TEST(HotStores, CalledStoresComeFirstMostRecentFirstThenTheInheritedOnesInTheirOrder) {
  HotStores hot;
  hot.Adopted(1, 1000);
  hot.Inherit(1, {"t/x", "t/y", "t/gone", "t/z"});
  // Nothing called since the adoption: the list is what etcd holds, so nothing to write.
  EXPECT_EQ(hot.Changed(1, {{"t/x", 0}, {"t/y", 500}, {"t/gone", 0}, {"t/z", 0}, {"t/c", 900}}),
            std::nullopt);
  // Restored stores (used by the restore alone) keep their place; called ones move up.
  hot.Restored(1, "t/x", 1100);
  hot.Restored(1, "t/y", 1200);
  EXPECT_EQ(hot.Changed(1, {{"t/x", 1100}, {"t/y", 1200}, {"t/gone", 0}, {"t/z", 0}}),
            std::nullopt);
  const std::optional<List> list =
      hot.Changed(1, {{"t/x", 1100}, {"t/y", 1300}, {"t/z", 0}, {"t/a", 1250}, {"t/b", 50}});
  ASSERT_TRUE(list.has_value());
  EXPECT_EQ(*list, (List{"t/y", "t/a", "t/x", "t/z"}));  // t/gone is no longer held
  hot.Written(1, *list);
  EXPECT_EQ(hot.Changed(1, {{"t/x", 1100}, {"t/y", 1300}, {"t/z", 0}, {"t/a", 1250}}),
            std::nullopt);
}

TEST(HotStores, TheListHoldsAtMostItsSize) {
  HotStores hot(2);
  hot.Adopted(0, 0);
  hot.Inherit(0, {"t/old"});
  EXPECT_EQ(hot.Changed(0, {{"t/a", 1}, {"t/b", 3}, {"t/c", 2}, {"t/old", 0}}),
            (List{"t/b", "t/c"}));
}

TEST(HotStores, AReleasedShardHasNoList) {
  HotStores hot;
  hot.Adopted(5, 0);
  hot.Inherit(5, {});
  hot.Released(5);
  EXPECT_EQ(hot.Changed(5, {{"t/a", 10}}), std::nullopt);
  hot.Inherit(5, {"t/a"});  // a read finishing after the release changes nothing
  EXPECT_EQ(hot.Changed(5, {{"t/a", 10}}), std::nullopt);
}

}  // namespace
}  // namespace adaptd::cluster
