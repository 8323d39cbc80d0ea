/**
 * Group commit: calls made while a batch runs wait for it and then run together, as the next
 * batch. A lone call runs at once (no timer, no added wait); under load one statement serves many
 * deliveries. A batch that fails is run again one call at a time, so a call that cannot succeed
 * fails alone.
 */
export class Batcher<I, O> {
  #waiting: { item: I; resolve: (value: O) => void; reject: (error: unknown) => void }[] = [];
  #running = false;
  readonly #run: (items: I[]) => Promise<O[]>;
  readonly #max: number;

  /** `run` answers one result per item, in their order. */
  constructor(run: (items: I[]) => Promise<O[]>, max = 64) {
    this.#run = run;
    this.#max = max;
  }

  call(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      if (!this.#running) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#running = true;
    while (this.#waiting.length > 0) {
      const batch = this.#waiting.splice(0, this.#max);
      try {
        const results = await this.#run(batch.map((b) => b.item));
        for (const [i, b] of batch.entries()) b.resolve(results[i] as O);
      } catch (error) {
        if (batch.length === 1) batch[0]?.reject(error);
        else
          for (const b of batch)
            await this.#run([b.item]).then(
              ([result]) => b.resolve(result as O),
              (e: unknown) => b.reject(e),
            );
      }
    }
    this.#running = false;
  }
}
