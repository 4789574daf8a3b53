#include <vector>

#define CHECK(x) do { if (!(x)) abort(); } while (0)

namespace geo {

/// A shape.
class Shape {
public:
    Shape();
    virtual ~Shape() = default;
    virtual double area() const = 0;
    int sides() const { return sides_; }
private:
    int sides_;
};

template <typename T>
T clamp(T v, T lo, T hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

template <typename T>
class Box {
public:
    T get() const;
};

namespace detail {
int helper(int x);
}

}  // namespace geo

geo::Shape::Shape() : sides_(0) {}

double area_of(const geo::Shape &s) { return s.area(); }

template <typename T>
T geo::Box<T>::get() const { return T(); }
