/** An inclusive range of TCP ports (BRIDGE_PORTS_RANGE). */
export interface PortRange {
  from: number;
  to: number;
}
