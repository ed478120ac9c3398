/**
 * A growable FIFO ring buffer: O(1) push and shift without `Array#shift`'s copying
 * (architecture.md rule 2). Capacity is a power of two, so a slot's index wraps with a mask
 * rather than a division; it doubles when full and never shrinks.
 */
export class RingBuffer<T> {
  private slots: (T | undefined)[];
  /** `slots.length - 1`: the mask that wraps an index. */
  private mask: number;
  private head = 0;
  private count = 0;

  constructor(initialCapacity = 16) {
    let capacity = 2;
    while (capacity < initialCapacity) capacity *= 2;
    this.slots = new Array<T | undefined>(capacity);
    this.mask = capacity - 1;
  }

  get length(): number {
    return this.count;
  }

  push(item: T): void {
    if (this.count === this.slots.length) this.grow();
    this.slots[(this.head + this.count) & this.mask] = item;
    this.count++;
  }

  peek(): T | undefined {
    return this.count === 0 ? undefined : this.slots[this.head];
  }

  shift(): T | undefined {
    if (this.count === 0) return undefined;
    const item = this.slots[this.head];
    this.slots[this.head] = undefined; // let the item be collected
    this.head = (this.head + 1) & this.mask;
    this.count--;
    return item;
  }

  /** Item `index` places from the head (0 = oldest). */
  at(index: number): T | undefined {
    if (index < 0 || index >= this.count) return undefined;
    return this.slots[(this.head + index) & this.mask];
  }

  private grow(): void {
    const bigger = new Array<T | undefined>(this.slots.length * 2);
    for (let i = 0; i < this.count; i++) bigger[i] = this.slots[(this.head + i) & this.mask];
    this.slots = bigger;
    this.mask = bigger.length - 1;
    this.head = 0;
  }
}
