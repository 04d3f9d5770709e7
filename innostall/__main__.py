from innostall.cli import main

raise SystemExit(main())
