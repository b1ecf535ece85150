#!/usr/bin/env python3
"""Writes data/eval/questions.jsonl, DwarfStar's own ds4-eval question set (docs/eval.md).

Every question here was written for this project. Integer answers are computed, and the
multiple-choice keys checked where a computation can, by this script: run it after an edit
(python3 data/eval/make_questions.py) and commit both files.
"""
import json, math, itertools, pathlib
out = []
def add(**kw): out.append(kw)
def I(i, title, q, ans, domain="arithmetic"):
    add(source="ds4", id=f"int-{i:02d}", domain=domain, title=title, question=q, kind="integer", answer=str(ans))

I(1, "Two products", "Compute 17 * 23 + 19 * 29.", 17*23+19*29)
I(2, "Multiples of 3 or 5", "What is the sum of all integers k with 1 <= k <= 100 such that k is divisible by 3 or by 5?",
  sum(k for k in range(1,101) if k%3==0 or k%5==0))
I(3, "Last three digits", "What are the last three digits of 7^100? Give them as an integer between 0 and 999.", pow(7,100,1000), "number theory")
I(4, "Linear system", "Integers x and y satisfy 3x + 2y = 47 and x - y = 4. What is x * y?", (lambda x: x*(x-4))(11), "algebra")
assert 3*11+2*7==47
I(5, "Lattice paths", "How many shortest paths along grid lines lead from (0,0) to (6,4) moving only right or up one unit at a time?", math.comb(10,4), "combinatorics")
I(6, "Divisor count", "How many positive divisors does 720 have?", sum(1 for d in range(1,721) if 720%d==0), "number theory")
I(7, "Sum of squares", "Compute 1^2 + 2^2 + 3^2 + ... + 30^2.", sum(k*k for k in range(1,31)))
I(8, "Quadratic roots", "The equation x^2 - 13x + 40 = 0 has two real roots. What is the sum of the squares of the roots?", 8*8+5*5, "algebra")
I(9, "Modular inverse", "Find the integer n with 0 <= n < 97 such that 13 * n leaves remainder 1 when divided by 97.", pow(13,-1,97), "number theory")
I(10, "Committees", "A club has 7 women and 5 men. How many committees of 4 people contain exactly 2 women?", math.comb(7,2)*math.comb(5,2), "combinatorics")
I(11, "Geometric series", "Compute 3 + 6 + 12 + 24 + ... + 3 * 2^9 (ten terms, each twice the previous).", sum(3*2**k for k in range(10)))
I(12, "Trailing zeros", "How many zeros does the decimal representation of 125! end with?", sum(125//5**k for k in range(1,4)), "number theory")
I(13, "Digit sum", "What is the sum of the decimal digits of 2^30?", sum(map(int,str(2**30))))
I(14, "Derangements", "In how many ways can 6 letters be put into their 6 addressed envelopes, one per envelope, so that no letter is in its own envelope?",
  sum(1 for p in itertools.permutations(range(6)) if all(p[i]!=i for i in range(6))), "combinatorics")

def C(i, title, q, choices, ans, domain="reasoning"):
    assert ans in "ABCDE"[:len(choices)]
    add(source="ds4", id=f"mc-{i:02d}", domain=domain, title=title, question=q, kind="choice", choices=choices, answer=ans)

C(1, "Syllogism", "All glims are tor. Some tor are vesh. No vesh is a glim. Which statement must be true?",
  ["Some glims are vesh", "Some tor are not glims", "No tor is vesh", "All tor are glims"], "B", "logic")
C(2, "Knights and knaves", "On an island, knights always tell the truth and knaves always lie. A says: 'B is a knave.' B says: 'A and I are the same kind.' What are A and B?",
  ["Both knights", "Both knaves", "A knight, B knave", "A knave, B knight"], "C", "logic")
C(3, "Clock angle", "What is the smaller angle between the hour and minute hands of a clock at 3:40?",
  ["120 degrees", "130 degrees", "140 degrees", "150 degrees"], "B", "geometry")
assert abs((3*30+40*0.5)-(40*6)) == 130
C(4, "Big-O", "A loop runs i from 1 to n, and for each i an inner loop doubles j from 1 while j < i. What is the total work as a function of n?",
  ["O(n)", "O(n log n)", "O(n^2)", "O(log n)", "O(n^2 log n)"], "B", "computing")
C(5, "Binary search steps", "What is the largest number of probes a binary search needs to decide whether a value is in a sorted array of 1000 distinct integers?",
  ["9", "10", "11", "500"], "B", "computing")
assert math.ceil(math.log2(1001)) == 10
C(6, "Sequence", "What comes next: 2, 6, 12, 20, 30, ?",
  ["36", "40", "42", "48"], "C", "patterns")
C(7, "Probability", "Two fair six-sided dice are rolled. What is the probability that the sum is 8?",
  ["1/9", "5/36", "1/6", "7/36"], "B", "probability")
assert sum(1 for a in range(1,7) for b in range(1,7) if a+b==8) == 5
C(8, "Relative speed", "Two trains 300 km apart head toward each other at 70 km/h and 80 km/h. How long until they meet?",
  ["1.5 hours", "2 hours", "2.5 hours", "3 hours"], "B", "arithmetic")
C(9, "Weighing", "Among 9 coins one is heavier and the rest weigh the same. What is the fewest weighings on a balance scale that always finds the heavy coin?",
  ["1", "2", "3", "4"], "B", "logic")
C(10, "Stack order", "The values 1, 2, 3, 4 are pushed onto a stack in that order, with pops allowed at any time. Which output order is impossible?",
  ["1 2 3 4", "4 3 2 1", "3 1 2 4", "2 1 4 3"], "C", "computing")
C(11, "Ordering", "Ann is taller than Ben. Cal is shorter than Ben. Dee is taller than Ann. Who is the second shortest?",
  ["Ann", "Ben", "Cal", "Dee"], "B", "logic")
C(12, "Two's complement", "What is the 8-bit two's complement representation of -6?",
  ["11111010", "10000110", "11111001", "00000110"], "A", "computing")
assert format((-6) & 0xff, "08b") == "11111010"
C(13, "Calendar", "If 1 March of some year is a Tuesday, what day of the week is 1 April of the same year?",
  ["Thursday", "Friday", "Saturday", "Sunday"], "B", "arithmetic")
assert (1 + 31) % 7 == 4  # Tuesday + 3 days
C(14, "Hash table", "A hash table with separate chaining holds n keys in m buckets, and the hash spreads keys uniformly. What is the expected cost of an unsuccessful search?",
  ["O(1)", "O(1 + n/m)", "O(log n)", "O(n)", "O(m)"], "B", "computing")

def S(i, title, lines, ans):
    text = "The following C function contains at most one defect (memory safety, undefined behaviour or a wrong result). " \
           "Name the line or lines of the defect, or 0 if the function is correct.\n\n" + \
           "\n".join(f"{n+1}: {l}" for n, l in enumerate(lines))
    assert 10 <= len(lines) <= 25, (title, len(lines))
    add(source="ds4", id=f"c-{i:02d}", domain="c-security", title=title, question=text, kind="lines", answer=ans)

S(1, "Copy into fixed buffer", [
 "#include <string.h>",
 "",
 "struct user { char name[16]; int id; };",
 "",
 "void set_name(struct user *u, const char *name) {",
 "  size_t n = strlen(name);",
 "  if (n > sizeof(u->name)) {",
 "    n = sizeof(u->name);",
 "  }",
 "  memcpy(u->name, name, n);",
 "  u->name[n] = '\\0';",
 "}"], "7-8,11")
S(2, "Array sum", [
 "#include <stddef.h>",
 "",
 "long sum_array(const int *a, size_t n) {",
 "  long total = 0;",
 "  if (a == NULL) {",
 "    return 0;",
 "  }",
 "  for (size_t i = 0; i <= n; i++) {",
 "    total += a[i];",
 "  }",
 "  return total;",
 "}"], "8")
S(3, "Matrix allocation", [
 "#include <stdlib.h>",
 "#include <stdint.h>",
 "",
 "double *alloc_matrix(uint32_t rows, uint32_t cols) {",
 "  if (rows == 0 || cols == 0) {",
 "    return NULL;",
 "  }",
 "  uint32_t count = rows * cols;",
 "  double *m = malloc(count * sizeof(double));",
 "  if (m == NULL) {",
 "    return NULL;",
 "  }",
 "  for (uint32_t i = 0; i < count; i++) {",
 "    m[i] = 0.0;",
 "  }",
 "  return m;",
 "}"], "8-9")
S(4, "List removal", [
 "#include <stdlib.h>",
 "",
 "struct node { int value; struct node *next; };",
 "",
 "void remove_value(struct node **head, int value) {",
 "  struct node *cur = *head;",
 "  struct node *prev = NULL;",
 "  while (cur != NULL) {",
 "    if (cur->value == value) {",
 "      if (prev) prev->next = cur->next; else *head = cur->next;",
 "      free(cur);",
 "      cur = cur->next;",
 "      continue;",
 "    }",
 "    prev = cur;",
 "    cur = cur->next;",
 "  }",
 "}"], "11-12")
S(5, "Log message", [
 "#include <stdio.h>",
 "#include <time.h>",
 "",
 "void log_event(FILE *out, const char *user_text) {",
 "  time_t now = time(NULL);",
 "  if (out == NULL || user_text == NULL) {",
 "    return;",
 "  }",
 "  fprintf(out, \"[%ld] \", (long)now);",
 "  fprintf(out, user_text);",
 "  fputc('\\n', out);",
 "  fflush(out);",
 "}"], "10")
S(6, "Config lookup", [
 "#include <stdlib.h>",
 "#include <string.h>",
 "",
 "struct entry { const char *key; const char *value; };",
 "",
 "const struct entry *find(const struct entry *t, size_t n, const char *key);",
 "",
 "size_t value_length(const struct entry *t, size_t n, const char *key) {",
 "  if (t == NULL || key == NULL) {",
 "    return 0;",
 "  }",
 "  const struct entry *e = find(t, n, key);",
 "  return strlen(e->value);",
 "}"], "12-13")
S(7, "Packet length", [
 "#include <stdint.h>",
 "#include <string.h>",
 "",
 "int read_payload(const uint8_t *pkt, size_t pkt_len, uint8_t *out, size_t out_cap) {",
 "  if (pkt_len < 2) {",
 "    return -1;",
 "  }",
 "  size_t len = ((size_t)pkt[0] << 8) | pkt[1];",
 "  if (len > out_cap) {",
 "    return -1;",
 "  }",
 "  memcpy(out, pkt + 2, len);",
 "  return (int)len;",
 "}"], "9-12")
S(8, "String duplicate", [
 "#include <stdlib.h>",
 "#include <string.h>",
 "",
 "char *dup_string(const char *s) {",
 "  if (s == NULL) {",
 "    return NULL;",
 "  }",
 "  size_t n = strlen(s);",
 "  char *copy = malloc(n);",
 "  if (copy == NULL) {",
 "    return NULL;",
 "  }",
 "  memcpy(copy, s, n + 1);",
 "  return copy;",
 "}"], "9,13")
S(9, "Double close", [
 "#include <stdio.h>",
 "#include <stdlib.h>",
 "",
 "int count_lines(const char *path) {",
 "  FILE *f = fopen(path, \"r\");",
 "  if (f == NULL) {",
 "    return -1;",
 "  }",
 "  int lines = 0, c;",
 "  while ((c = fgetc(f)) != EOF) {",
 "    if (c == '\\n') lines++;",
 "  }",
 "  fclose(f);",
 "  if (ferror(f)) {",
 "    return -1;",
 "  }",
 "  return lines;",
 "}"], "13-14")
S(10, "Signed index", [
 "#include <stddef.h>",
 "",
 "static const char *names[4] = {\"red\", \"green\", \"blue\", \"black\"};",
 "",
 "const char *color_name(int index) {",
 "  if (index >= 4) {",
 "    return \"unknown\";",
 "  }",
 "  return names[index];",
 "}",
 "",
 "size_t color_count(void) { return sizeof(names) / sizeof(names[0]); }"], "6,9")
S(11, "Reverse in place (safe)", [
 "#include <stddef.h>",
 "",
 "void reverse(int *a, size_t n) {",
 "  if (a == NULL || n < 2) {",
 "    return;",
 "  }",
 "  size_t i = 0, j = n - 1;",
 "  while (i < j) {",
 "    int t = a[i];",
 "    a[i] = a[j];",
 "    a[j] = t;",
 "    i++;",
 "    j--;",
 "  }",
 "}"], "0")
S(12, "Bounded append (safe)", [
 "#include <string.h>",
 "",
 "/* Appends src to dst (capacity cap, NUL-terminated); returns 0, or -1 if it does not fit. */",
 "int append(char *dst, size_t cap, const char *src) {",
 "  size_t used = strnlen(dst, cap);",
 "  size_t n = strlen(src);",
 "  if (used == cap || n >= cap - used) {",
 "    return -1;",
 "  }",
 "  memcpy(dst + used, src, n + 1);",
 "  return 0;",
 "}"], "0")
S(13, "Average", [
 "#include <stddef.h>",
 "",
 "int average(const int *a, size_t n, int *out) {",
 "  if (a == NULL || out == NULL) {",
 "    return -1;",
 "  }",
 "  long long sum = 0;",
 "  for (size_t i = 0; i < n; i++) {",
 "    sum += a[i];",
 "  }",
 "  *out = (int)(sum / (long long)n);",
 "  return 0;",
 "}"], "11")

with open(pathlib.Path(__file__).resolve().parent / "questions.jsonl", "w") as f:
    f.write("# DwarfStar's own ds4-eval question set (docs/eval.md): one JSON object per line.\n")
    f.write("# Generated by data/eval/make_questions.py (edit that, not this file).\n")
    for o in out:
        f.write(json.dumps(o, ensure_ascii=False) + "\n")
ids = [o["id"] for o in out]
assert len(ids) == len(set(ids))
print(f"{len(out)} questions")
