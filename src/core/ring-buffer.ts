/**
 * A growable FIFO: O(1) push and shift without `Array#shift`'s copying (architecture.md rule 2).
 * The items sit in one array from `head`; when the tail reaches the array's end, the items still
 * in it move to the front of a fresh array (twice as long when more than half full), so each
 * push copies at most one item on average.
 *
 * A fresh array rather than a ring that wraps in place: V8 keeps young objects apart, and a
 * store of a young object (a request just made) into an old array (a ring that has lived
 * through garbage collections) goes through the write barrier's slow path, which records the
 * slot for the next scavenge. That was a twentieth of a `batch()` call; an array renewed every
 * `length` pushes stays young while it is written.
 */
export class RingBuffer<T> {
  private slots: (T | undefined)[];
  private head = 0;
  private count = 0;

  constructor(initialCapacity = 16) {
    let capacity = 2;
    while (capacity < initialCapacity) capacity *= 2;
    this.slots = new Array<T | undefined>(capacity);
  }

  get length(): number {
    return this.count;
  }

  push(item: T): void {
    if (this.head + this.count === this.slots.length) this.renew();
    this.slots[this.head + this.count] = item;
    this.count++;
  }

  peek(): T | undefined {
    return this.count === 0 ? undefined : this.slots[this.head];
  }

  shift(): T | undefined {
    if (this.count === 0) return undefined;
    const item = this.slots[this.head];
    this.slots[this.head] = undefined; // let the item be collected
    this.head++;
    this.count--;
    return item;
  }

  /** Puts `item` in the head's place (the head leaves; the length stays). */
  replaceHead(item: T): void {
    if (this.count > 0) this.slots[this.head] = item;
  }

  /** Item `index` places from the head (0 = oldest). */
  at(index: number): T | undefined {
    if (index < 0 || index >= this.count) return undefined;
    return this.slots[this.head + index];
  }

  /** The tail is at the end: the items move to the front of a fresh array, twice as long when more than half full. */
  private renew(): void {
    const slots = this.slots;
    const fresh = new Array<T | undefined>(this.count > slots.length / 2 ? slots.length * 2 : slots.length);
    for (let i = 0; i < this.count; i++) fresh[i] = slots[this.head + i];
    this.slots = fresh;
    this.head = 0;
  }
}
