/// A counter.
class Counter {
  int value = 0;

  Counter(this.value);

  /// Adds one.
  void increment() {
    value++;
  }

  int get doubled => value * 2;
}

int add(int a, int b) {
  return a + b;
}

void main() {
  print(add(1, 2));
}
