// The CSV reader (csv.h): RFC 4180's cases one by one, the leniencies the importers rely on, and a
// round trip of random fields through an obviously correct writer (every field quoted, quotes
// doubled) and a minimal-quoting one.
#include "importers/csv.h"

#include <gtest/gtest.h>

#include <random>

namespace opscope::importers::csv {
namespace {

using Rows = std::vector<std::vector<std::string>>;

Rows ReadAll(std::string_view text, std::vector<size_t>* lines = nullptr) {
  Reader r(text);
  Rows rows;
  std::vector<std::string> f;
  while (!r.AtEnd()) {
    if (lines) lines->push_back(r.LineNumber());
    Status st = r.Next(&f);
    EXPECT_TRUE(st.ok()) << st.message();
    if (!st.ok()) break;
    rows.push_back(f);
  }
  return rows;
}

TEST(CsvReader, PlainFieldsAndLineEndings) {
  EXPECT_EQ(ReadAll("a,b,c\n1,2,3\n"), (Rows{{"a", "b", "c"}, {"1", "2", "3"}}));
  EXPECT_EQ(ReadAll("a,b\r\n1,2\r\n"), (Rows{{"a", "b"}, {"1", "2"}}));
  EXPECT_EQ(ReadAll("a,b\n1,2"), (Rows{{"a", "b"}, {"1", "2"}}));  // no final line break
  EXPECT_EQ(ReadAll("a,b\r"), (Rows{{"a", "b"}}));
  EXPECT_EQ(ReadAll(",,\n"), (Rows{{"", "", ""}}));
  EXPECT_EQ(ReadAll("a,\n"), (Rows{{"a", ""}}));
  EXPECT_EQ(ReadAll("\n"), (Rows{{""}}));
  EXPECT_EQ(ReadAll(""), Rows{});
}

TEST(CsvReader, QuotedFields) {
  EXPECT_EQ(ReadAll("\"a,b\",c\n"), (Rows{{"a,b", "c"}}));
  EXPECT_EQ(ReadAll("\"say \"\"hi\"\"\",x\n"), (Rows{{"say \"hi\"", "x"}}));
  EXPECT_EQ(ReadAll("\"\",\"\"\"\"\n"), (Rows{{"", "\""}}));
  // A CR inside quotes is data; a CR LF outside ends the record.
  EXPECT_EQ(ReadAll("\"a\rb\",c\r\n"), (Rows{{"a\rb", "c"}}));
}

TEST(CsvReader, LineBreaksInsideQuotesAreData) {
  std::vector<size_t> lines;
  Rows rows = ReadAll("h1,h2\n\"two\nlines\",x\n\"crlf\r\nkept\",y\nlast,z\n", &lines);
  EXPECT_EQ(rows, (Rows{{"h1", "h2"}, {"two\nlines", "x"}, {"crlf\r\nkept", "y"}, {"last", "z"}}));
  EXPECT_EQ(lines, (std::vector<size_t>{1, 2, 4, 6}));  // each record's first physical line
}

TEST(CsvReader, RawTextOfAMultiLineRecord) {
  Reader r("\"a\nb\",c\r\nnext\n");
  std::vector<std::string> f;
  std::string_view raw;
  ASSERT_TRUE(r.Next(&f, &raw).ok());
  EXPECT_EQ(raw, "\"a\nb\",c");
  EXPECT_EQ(r.LineNumber(), 3u);
  EXPECT_EQ(r.Line(), "next");
}

TEST(CsvReader, LenientWhereTheToolsAre) {
  // A quote inside an unquoted field is a character; text after a closing quote is kept.
  EXPECT_EQ(ReadAll("12\" monitor,x\n"), (Rows{{"12\" monitor", "x"}}));
  EXPECT_EQ(ReadAll("\"ab\"cd,x\n"), (Rows{{"abcd", "x"}}));
  EXPECT_EQ(ReadAll(" \"a\" ,x\n"), (Rows{{" \"a\" ", "x"}}));
}

TEST(CsvReader, UnclosedQuoteIsAnErrorNamingItsLine) {
  Reader r("a,b\nok,1\n2,\"cut here\nand the file ends");
  std::vector<std::string> f;
  ASSERT_TRUE(r.Next(&f).ok());
  ASSERT_TRUE(r.Next(&f).ok());
  Status st = r.Next(&f);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("line 3"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("not closed"), std::string::npos) << st.message();
  EXPECT_EQ(r.LineNumber(), 3u);  // the cursor stays
}

TEST(CsvReader, SkipLineAndLineLookAtPhysicalLines) {
  Reader r("==1== free \"text\r\n\"a\",\"b\"\n");
  EXPECT_EQ(r.Line(), "==1== free \"text");
  r.SkipLine();
  EXPECT_EQ(r.LineNumber(), 2u);
  std::vector<std::string> f;
  ASSERT_TRUE(r.Next(&f).ok());
  EXPECT_EQ(f, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(r.AtEnd());
}

TEST(CsvReader, OtherSeparator) {
  Reader r("a;\"b;c\"\n", ';');
  std::vector<std::string> f;
  ASSERT_TRUE(r.Next(&f).ok());
  EXPECT_EQ(f, (std::vector<std::string>{"a", "b;c"}));
}

// Random tables written two ways read back the same.
std::string QuoteAlways(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}
std::string QuoteWhenNeeded(const std::string& s) {
  // An empty first field of a one-field record would read as a blank line; quote it too.
  if (s.empty() || s.find_first_of(",\"\r\n") != std::string::npos) return QuoteAlways(s);
  return s;
}

TEST(CsvReader, RandomRoundTrip) {
  std::mt19937 rng(44);
  const std::string alphabet = "ab ,\"\r\n";
  for (int iter = 0; iter < 2000; ++iter) {
    Rows rows(1 + rng() % 4);
    const size_t width = 1 + rng() % 4;
    for (auto& row : rows)
      for (size_t k = 0; k < width; ++k) {
        std::string cell;
        for (size_t n = rng() % 6; n-- > 0;) cell += alphabet[rng() % alphabet.size()];
        row.push_back(cell);
      }
    for (auto* quote : {&QuoteAlways, &QuoteWhenNeeded}) {
      const char* eol = rng() % 2 ? "\r\n" : "\n";
      std::string text;
      for (const auto& row : rows) {
        for (size_t k = 0; k < row.size(); ++k) text += (k ? "," : "") + quote(row[k]);
        text += eol;
      }
      ASSERT_EQ(ReadAll(text), rows) << text;
    }
  }
}

}  // namespace
}  // namespace opscope::importers::csv
