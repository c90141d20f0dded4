// A first-in first-out list with constant-time removal from the front, which
// Array.prototype.shift does not guarantee.

export class Fifo<T> {
  #items: T[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  shift(): T | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head];
    this.#head++;
    // Drop the consumed prefix once it is most of the array, so memory stays
    // proportional to the length while each item is copied O(1) times.
    if (this.#head * 2 >= this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }
}
