/** The service state every store keeps (D60): whether charged calls are paused, why and since when. */
/** A pause of the charged calls: why (shown in the refusal) and since when. */
export interface Pause {
  message: string;
  since: string;
}
