import { Text } from 'ink';

export interface HeaderLineProps {
  title: string;
  /** A short state word shown in colour, e.g. `ready` or `draining`. */
  state?: string;
  stateColor?: string;
  /** Further facts, joined with ` · `. */
  parts?: readonly string[];
}

export function HeaderLine({ title, state, stateColor = 'green', parts = [] }: HeaderLineProps) {
  return (
    <Text wrap="truncate">
      <Text bold>{title}</Text>
      {state !== undefined && (
        <Text>
          {' · '}
          <Text color={stateColor} bold>
            {state}
          </Text>
        </Text>
      )}
      {parts.length > 0 && <Text>{` · ${parts.join(' · ')}`}</Text>}
    </Text>
  );
}
