package demo;

import java.util.List;

/** A repository. */
public class Repository<T> {
    private final List<T> items;
    public static final int LIMIT = 10, OTHER = 2;

    public Repository(List<T> items) {
        this.items = items;
    }

    /** Finds one. */
    @Override
    public T find(int id) {
        return items.get(id);
    }

    public T find(String name) {
        return null;
    }

    interface Listener {
        void changed(T item);
    }

    enum State {
        OPEN, CLOSED;

        boolean isOpen() { return this == OPEN; }
    }
}

record Pair(int a, int b) {}
