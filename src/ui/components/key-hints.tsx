import { Text } from 'ink';

export interface KeyHintsProps {
  hints: readonly (readonly [key: string, action: string])[];
}

/** The footer line: `q quit  →/n next`. */
export function KeyHints({ hints }: KeyHintsProps) {
  return (
    <Text dimColor wrap="truncate">
      {hints.map(([key, action]) => `${key} ${action}`).join('   ')}
    </Text>
  );
}
