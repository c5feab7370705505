#include "server/encoders/bert/wordpiece.h"

#include "gtest/gtest.h"
#include "server/encoders/bert/test_model.h"

namespace adaptd::bert {
namespace {

class WordPieceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = WordPieceTokenizer::FromTokens(
        testing::Vocab({"hello", "world", "!",  ",", "cafe", "un", "##aff", "##able", "the", "a",
                        "##b",   "中",    "国", "$", "3",    ".",  "##14",  "naive",  "'",   "s"}));
    ASSERT_TRUE(t.ok()) << t.status();
    tok_ = std::make_unique<WordPieceTokenizer>(*std::move(t));
  }
  // Tokens of `text` without [CLS] / [SEP].
  std::vector<std::string> Pieces(std::string_view text, int max_tokens = 512) {
    std::vector<std::string> out;
    auto ids = tok_->Encode(text, max_tokens);
    EXPECT_EQ(tok_->token(ids.front()), "[CLS]");
    EXPECT_EQ(tok_->token(ids.back()), "[SEP]");
    for (size_t i = 1; i + 1 < ids.size(); ++i) out.push_back(tok_->token(ids[i]));
    return out;
  }
  using V = std::vector<std::string>;
  std::unique_ptr<WordPieceTokenizer> tok_;
};

TEST_F(WordPieceTest, LowerCasesStripsAccentsAndSplitsPunctuation) {
  EXPECT_EQ(Pieces("Hello, WORLD!"), (V{"hello", ",", "world", "!"}));
  EXPECT_EQ(Pieces("Café naïve"), (V{"cafe", "naive"}));
  // "14" starts a word after the split at "."; the vocabulary has only "##14".
  EXPECT_EQ(Pieces("$3.14"), (V{"$", "3", ".", "[UNK]"}));
  EXPECT_EQ(Pieces("the's"), (V{"the", "'", "s"}));
}

TEST_F(WordPieceTest, GreedyLongestMatchWithContinuations) {
  EXPECT_EQ(Pieces("unaffable"), (V{"un", "##aff", "##able"}));
  EXPECT_EQ(Pieces("abbb"), (V{"a", "##b", "##b", "##b"}));
  // One unmatchable piece makes the whole word [UNK].
  EXPECT_EQ(Pieces("unaffablex hello"), (V{"[UNK]", "hello"}));
  V hundred{"a"};
  hundred.insert(hundred.end(), 99, "##b");
  EXPECT_EQ(Pieces("a" + std::string(99, 'b')), hundred);        // 100 characters
  EXPECT_EQ(Pieces("a" + std::string(100, 'b')), (V{"[UNK]"}));  // 101 characters
}

TEST_F(WordPieceTest, CleansWhitespaceControlAndSplitsCjk) {
  EXPECT_EQ(Pieces("hello\tworld\n\r hello\u00a0world"), (V{"hello", "world", "hello", "world"}));
  EXPECT_EQ(Pieces("hel\x01lo wor\u200bld"), (V{"hello", "world"}));
  EXPECT_EQ(Pieces("中国hello"), (V{"中", "国", "hello"}));
  EXPECT_EQ(Pieces("🙂hello 🙂"), (V{"[UNK]", "[UNK]"}));
  EXPECT_EQ(Pieces(""), V{});
  EXPECT_EQ(Pieces("  \t\n "), V{});
  // Invalid UTF-8 bytes are dropped: "helloworld" is one word, not in the vocabulary.
  EXPECT_EQ(Pieces(std::string("hello\xff\xfeworld", 12)), V{"[UNK]"});
}

TEST_F(WordPieceTest, TruncatesToMaxTokensIncludingSpecialTokens) {
  auto ids = tok_->Encode("hello world hello world hello", 4);
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(tok_->token(ids[1]), "hello");
  EXPECT_EQ(tok_->token(ids[2]), "world");
  EXPECT_EQ(tok_->token(ids[3]), "[SEP]");
  // A word's pieces are cut mid-word when the budget runs out.
  ids = tok_->Encode("unaffable", 4);
  EXPECT_EQ(tok_->token(ids[2]), "##aff");
}

TEST_F(WordPieceTest, CasedVocabularyKeepsCaseAndAccents) {
  auto t = WordPieceTokenizer::FromTokens(testing::Vocab({"Café", "cafe"}), /*lower_case=*/false);
  ASSERT_TRUE(t.ok());
  auto ids = t->Encode("Café", 10);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(t->token(ids[1]), "Café");
}

TEST(WordPieceLoadTest, RequiresSpecialTokensAndAReadableFile) {
  auto t = WordPieceTokenizer::FromTokens({"[CLS]", "[SEP]", "x"}, true, "/m/vocab.txt");
  EXPECT_NE(t.status().message().find("/m/vocab.txt: the vocabulary has no [UNK] token"),
            std::string::npos)
      << t.status();
  auto missing = WordPieceTokenizer::Load("/nonexistent/vocab.txt");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace adaptd::bert
