//! A crate.
use std::fmt;

/// A point.
#[derive(Debug, Clone)]
pub struct Point<T> {
    pub x: T,
    y: T,
}

pub trait Shape {
    const SIDES: usize;
    type Unit;
    fn area(&self) -> f64;
    fn name(&self) -> String {
        "shape".into()
    }
}

impl<T: Copy> Point<T> {
    /// Makes one.
    pub fn new(x: T, y: T) -> Self {
        let local = 1;
        Point { x, y }
    }
}

impl fmt::Display for Point<f64> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {})", self.x, self.y)
    }
}

impl fmt::Debug for Wrapper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Ok(())
    }
}

macro_rules! square {
    ($x:expr) => {
        $x * $x
    };
}

pub const ORIGIN: Point<i32> = Point { x: 0, y: 0 };

pub enum Kind { A, B }

mod tests {
    #[test]
    fn works() {}
}
